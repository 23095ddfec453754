#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"

namespace common {
namespace {

// Escapes `value` for the text format; `quote` also escapes '"' (label values).
std::string Escape(absl::string_view value, bool quote) {
  std::string out;
  out.reserve(value.size());
  while (!value.empty()) {
    const size_t n = Utf8SequenceLength(value);
    if (n == 0) {
      out += kUtf8Replacement;
      value.remove_prefix(1);
      continue;
    }
    const char c = value[0];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out.append(value.data(), n);
    }
    value.remove_prefix(n);
  }
  return out;
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}` for the given names and values, plus an extra pair when `extra_name` is set;
// empty when there are no labels at all.
std::string LabelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      absl::string_view extra_name = "", absl::string_view extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    absl::StrAppend(&out, out.empty() ? "" : ",", names[i], "=\"", EscapeLabelValue(values[i]),
                    "\"");
  }
  if (!extra_name.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : ",", extra_name, "=\"", extra_value, "\"");
  }
  return out.empty() ? out : absl::StrCat("{", out, "}");
}

void AppendHeader(std::string* out, const std::string& name, const std::string& help,
                  MetricType type) {
  absl::StrAppend(out, "# HELP ", name, " ", EscapeHelp(help), "\n# TYPE ", name, " ",
                  TypeName(type), "\n");
}

// The children of `family`, sorted by their label values.
template <typename T>
std::vector<std::pair<std::vector<std::string>, const T*>> SortedChildren(
    const absl::flat_hash_map<std::vector<std::string>, std::unique_ptr<T>>& children) {
  std::vector<std::pair<std::vector<std::string>, const T*>> sorted;
  sorted.reserve(children.size());
  for (const auto& [labels, child] : children) sorted.emplace_back(labels, child.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return sorted;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // The first bucket whose upper bound holds the value ("le" is inclusive); +Inf otherwise.
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  uint64_t old_bits = sum_bits_.load(std::memory_order_relaxed);
  while (true) {
    double old_sum;
    std::memcpy(&old_sum, &old_bits, sizeof(old_sum));
    const double new_sum = old_sum + value;
    uint64_t new_bits;
    std::memcpy(&new_bits, &new_sum, sizeof(new_bits));
    if (sum_bits_.compare_exchange_weak(old_bits, new_bits, std::memory_order_relaxed)) break;
  }
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

double Histogram::sum() const {
  const uint64_t bits = sum_bits_.load(std::memory_order_relaxed);
  double sum;
  std::memcpy(&sum, &bits, sizeof(sum));
  return sum;
}

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

MetricsRegistry& MetricsRegistry::Default() {
  static MetricsRegistry* registry = new MetricsRegistry();
  return *registry;
}

CounterFamily* MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                           std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<CounterFamily>& family = counters_[name];
  if (family == nullptr) {
    family.reset(new CounterFamily(name, help, std::move(label_names),
                                   [] { return std::make_unique<Counter>(); }));
  }
  return family.get();
}

GaugeFamily* MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                       std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<GaugeFamily>& family = gauges_[name];
  if (family == nullptr) {
    family.reset(new GaugeFamily(name, help, std::move(label_names),
                                 [] { return std::make_unique<Gauge>(); }));
  }
  return family.get();
}

HistogramFamily* MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                               std::vector<std::string> label_names,
                                               std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  bounds.erase(std::remove_if(bounds.begin(), bounds.end(),
                              [](double b) { return std::isnan(b) || std::isinf(b); }),
               bounds.end());
  absl::MutexLock lock(&mu_);
  std::unique_ptr<HistogramFamily>& family = histograms_[name];
  if (family == nullptr) {
    family.reset(new HistogramFamily(name, help, std::move(label_names),
                                     [bounds] { return std::make_unique<Histogram>(bounds); }));
  }
  return family.get();
}

uint64_t MetricsRegistry::AddCallback(MetricType type, const std::string& name,
                                      const std::string& help, std::vector<std::string> label_names,
                                      std::function<std::vector<CallbackSample>()> collect) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_callback_id_++;
  callbacks_[id] = Callback{type, name, help, std::move(label_names), std::move(collect)};
  return id;
}

void MetricsRegistry::RemoveCallback(uint64_t id) {
  absl::MutexLock lock(&mu_);
  callbacks_.erase(id);
}

std::string MetricsRegistry::Render() const {
  // Each family's text, keyed by name so the output is sorted and stable.
  std::map<std::string, std::string> texts;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : counters_) {
    std::string& text = texts[name];
    AppendHeader(&text, name, family->help_, MetricType::kCounter);
    absl::MutexLock family_lock(&family->mu_);
    for (const auto& [labels, counter] : SortedChildren(family->children_)) {
      absl::StrAppend(&text, name, LabelText(family->label_names_, labels), " ", counter->value(),
                      "\n");
    }
  }
  for (const auto& [name, family] : gauges_) {
    std::string& text = texts[name];
    AppendHeader(&text, name, family->help_, MetricType::kGauge);
    absl::MutexLock family_lock(&family->mu_);
    for (const auto& [labels, gauge] : SortedChildren(family->children_)) {
      absl::StrAppend(&text, name, LabelText(family->label_names_, labels), " ", gauge->value(),
                      "\n");
    }
  }
  for (const auto& [name, family] : histograms_) {
    std::string& text = texts[name];
    AppendHeader(&text, name, family->help_, MetricType::kHistogram);
    absl::MutexLock family_lock(&family->mu_);
    for (const auto& [labels, histogram] : SortedChildren(family->children_)) {
      // Read the buckets first and derive the count from them, so that the +Inf bucket and
      // _count agree even while observations arrive.
      const std::vector<uint64_t> counts = histogram->BucketCounts();
      const double sum = histogram->sum();
      uint64_t cumulative = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        cumulative += counts[i];
        const std::string le =
            i < histogram->bounds().size() ? FormatMetricValue(histogram->bounds()[i]) : "+Inf";
        absl::StrAppend(&text, name, "_bucket", LabelText(family->label_names_, labels, "le", le),
                        " ", cumulative, "\n");
      }
      absl::StrAppend(&text, name, "_sum", LabelText(family->label_names_, labels), " ",
                      FormatMetricValue(sum), "\n", name, "_count",
                      LabelText(family->label_names_, labels), " ", cumulative, "\n");
    }
  }
  for (const auto& [id, callback] : callbacks_) {
    std::string& text = texts[callback.name];
    if (text.empty()) AppendHeader(&text, callback.name, callback.help, callback.type);
    for (const CallbackSample& sample : callback.collect()) {
      absl::StrAppend(&text, callback.name, LabelText(callback.label_names, sample.label_values),
                      " ", FormatMetricValue(sample.value), "\n");
    }
  }
  std::string out;
  for (const auto& [name, text] : texts) out += text;
  return out;
}

std::string EscapeLabelValue(absl::string_view value) { return Escape(value, /*quote=*/true); }

std::string EscapeHelp(absl::string_view help) { return Escape(help, /*quote=*/false); }

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest of %.15g .. %.17g that reads back as the same double.
  for (int precision = 15; precision <= 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    if (std::strtod(text.c_str(), nullptr) == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

}  // namespace common
