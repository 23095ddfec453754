// A small metrics registry with the Prometheus text exposition format (version 0.0.4):
// counters, gauges and histograms with labels, plus families computed at scrape time
// (callbacks, for figures another component already keeps, such as RocksDB's).
//
// Recording is cheap: a metric is a few atomics; finding the child of a family for a set of
// label values takes the family's mutex once, so hot paths keep the pointer it returns
// (children live as long as the registry). Every family has a fixed list of label names; a child
// is made on first use of its label values. Label values come from our own code (service and
// method names, status codes, fixed words), never from request payloads, so the number of
// series stays bounded.
#ifndef COMMON_METRICS_H_
#define COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace common {

class Counter {
 public:
  void Increment(uint64_t by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t value) { value_.store(value, std::memory_order_relaxed); }
  void Add(int64_t by) { value_.fetch_add(by, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Observations counted into fixed buckets (upper bounds, increasing; +Inf is implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts (not cumulative), one more than bounds() (the last is +Inf).
  std::vector<uint64_t> BucketCounts() const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_bits_{0};  // a double, updated by compare-and-swap
};

// Latency buckets in seconds, 1 ms to 10 s.
std::vector<double> LatencyBuckets();

enum class MetricType { kCounter, kGauge, kHistogram };

// One family: a name, its help text, its label names, and a child per set of label values.
template <typename T>
class Family {
 public:
  // The child for `label_values` (as many as the family's label names), made on first use.
  // The pointer stays valid as long as the registry.
  T* WithLabels(absl::Span<const std::string> label_values);
  T* WithLabels(std::initializer_list<std::string> label_values) {
    return WithLabels(absl::Span<const std::string>(label_values.begin(), label_values.size()));
  }

 private:
  friend class MetricsRegistry;
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::function<std::unique_ptr<T>()> make)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        make_(std::move(make)) {}

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<T>()> make_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::vector<std::string>, std::unique_ptr<T>> children_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// One sample of a family computed at scrape time.
struct CallbackSample {
  std::vector<std::string> label_values;
  double value = 0;
};

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The process's registry, which the coordinator's /metrics serves.
  static MetricsRegistry& Default();

  // Families are registered once, by name; registering the same name again returns the first
  // one (so a function-local static in a library and a test can both ask for it). Names follow
  // Prometheus's rules ([a-zA-Z_:][a-zA-Z0-9_:]*); label names too, without "le" on histograms.
  CounterFamily* AddCounter(const std::string& name, const std::string& help,
                            std::vector<std::string> label_names = {});
  GaugeFamily* AddGauge(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names = {});
  HistogramFamily* AddHistogram(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names, std::vector<double> bounds);

  // A counter or gauge family whose samples `collect` computes at each scrape. `collect` runs
  // under the registry's lock: it must not call the registry. Returns an id for RemoveCallback;
  // once RemoveCallback returns, `collect` is not running and never runs again.
  uint64_t AddCallback(MetricType type, const std::string& name, const std::string& help,
                       std::vector<std::string> label_names,
                       std::function<std::vector<CallbackSample>()> collect);
  void RemoveCallback(uint64_t id);

  // The Prometheus text exposition of every family, sorted by name.
  std::string Render() const;

 private:
  struct Callback {
    MetricType type;
    std::string name;
    std::string help;
    std::vector<std::string> label_names;
    std::function<std::vector<CallbackSample>()> collect;
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<CounterFamily>> counters_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<GaugeFamily>> gauges_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<HistogramFamily>> histograms_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_callback_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Callback> callbacks_ ABSL_GUARDED_BY(mu_);
};

// Text-format escaping: a label value escapes backslash, double quote and newline; help text
// escapes backslash and newline. Bytes that are not valid UTF-8 become U+FFFD.
std::string EscapeLabelValue(absl::string_view value);
std::string EscapeHelp(absl::string_view help);
// A sample value as the text format writes it ("+Inf", "-Inf", "NaN", or the shortest exact
// decimal).
std::string FormatMetricValue(double value);

template <typename T>
T* Family<T>::WithLabels(absl::Span<const std::string> label_values) {
  std::vector<std::string> key(label_values.begin(), label_values.end());
  // A call with the wrong number of values is a programming error; it gets a child of its own
  // with the values padded or cut, rather than a crash in production.
  key.resize(label_names_.size());
  absl::MutexLock lock(&mu_);
  std::unique_ptr<T>& child = children_[key];
  if (child == nullptr) child = make_();
  return child.get();
}

}  // namespace common

#endif  // COMMON_METRICS_H_
