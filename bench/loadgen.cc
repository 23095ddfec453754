#include "bench/loadgen.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace bench {

absl::StatusOr<double> ProcessCpuSeconds(int pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: fields count from the
  // last ')'. utime and stime are fields 14 and 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state): utime is fields[11], stime fields[12].
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected contents of ", path));
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[index];
}

namespace {

// Shared state of one run. Streams record into per-stream vectors (no contention), and the
// measured window is decided by the call's start time.
class Run {
 public:
  Run(const LoadOptions& options, const IssueFn& issue)
      : options_(options),
        issue_(issue),
        latencies_(options.concurrency),
        errors_(options.concurrency, 0),
        calls_started_(options.concurrency, 0) {}

  LoadResult Execute() {
    start_ = absl::Now();
    measure_from_ = start_ + options_.warmup;
    stop_at_ = measure_from_ + options_.duration;
    active_.store(options_.concurrency);
    for (int s = 0; s < options_.concurrency; ++s) Next(s);
    LoadResult result;
    if (options_.cpu_pid > 0 || options_.window_counter) {
      // Sampled when the window opens and when it closes (or the run ends, with max_calls).
      const int pids[] = {options_.cpu_pid, options_.peer_cpu_pid,
                          options_.cpu_pid > 0 ? static_cast<int>(::getpid()) : 0};
      double* const outs[] = {&result.cpu_seconds, &result.peer_cpu_seconds,
                              &result.client_cpu_seconds};
      absl::StatusOr<double> begin[3];
      absl::StatusOr<double> counter_begin = absl::UnknownError("not sampled");
      absl::SleepFor(measure_from_ - absl::Now());
      for (int i = 0; i < 3; ++i) {
        if (pids[i] > 0) begin[i] = ProcessCpuSeconds(pids[i]);
      }
      if (options_.window_counter) counter_begin = options_.window_counter();
      all_done_.WaitForNotificationWithDeadline(stop_at_);
      for (int i = 0; i < 3; ++i) {
        if (pids[i] <= 0 || !begin[i].ok()) continue;
        absl::StatusOr<double> end = ProcessCpuSeconds(pids[i]);
        if (end.ok()) *outs[i] = *end - *begin[i];
      }
      if (counter_begin.ok()) {
        absl::StatusOr<double> end = options_.window_counter();
        if (end.ok()) result.counter_delta = *end - *counter_begin;
      }
    }
    all_done_.WaitForNotification();

    result.concurrency = options_.concurrency;
    std::vector<double> all;
    for (int s = 0; s < options_.concurrency; ++s) {
      all.insert(all.end(), latencies_[s].begin(), latencies_[s].end());
      result.errors += errors_[s];
    }
    std::sort(all.begin(), all.end());
    result.calls = static_cast<int64_t>(all.size());
    {
      absl::MutexLock lock(&error_mu_);
      result.seconds = limit_reached_ && last_end_ > measure_from_
                           ? absl::ToDoubleSeconds(last_end_ - measure_from_)
                           : absl::ToDoubleSeconds(options_.duration);
    }
    result.throughput = result.calls / result.seconds;
    result.p50_us = Percentile(all, 0.50);
    result.p99_us = Percentile(all, 0.99);
    result.p999_us = Percentile(all, 0.999);
    result.latencies_us = std::move(all);
    absl::MutexLock lock(&error_mu_);
    result.first_error = first_error_;
    return result;
  }

 private:
  void Next(int stream) {
    const absl::Time begin = absl::Now();
    bool stop = begin >= stop_at_;
    if (!stop && options_.max_calls > 0 && begin >= measure_from_ &&
        measured_started_.fetch_add(1) >= options_.max_calls) {
      stop = true;
      absl::MutexLock lock(&error_mu_);
      limit_reached_ = true;
    }
    if (stop) {
      if (active_.fetch_sub(1) == 1) all_done_.Notify();
      return;
    }
    const int64_t seq = calls_started_[stream]++;
    issue_(stream, seq, [this, stream, begin](grpc::Status status) {
      const absl::Time end = absl::Now();
      // The calls that end inside the window count (whenever they started): the completion
      // rate of a closed loop in steady state, also for calls slower than the warm-up.
      const bool counted =
          options_.max_calls > 0 ? begin >= measure_from_ : end >= measure_from_ && end <= stop_at_;
      if (counted) {
        if (options_.max_calls > 0) {
          absl::MutexLock lock(&error_mu_);
          last_end_ = std::max(last_end_, end);
        }
        if (status.ok()) {
          latencies_[stream].push_back(absl::ToDoubleMicroseconds(end - begin));
        } else {
          ++errors_[stream];
          absl::MutexLock lock(&error_mu_);
          if (first_error_.empty()) {
            first_error_ = absl::StrCat(status.error_code(), ": ", status.error_message());
          }
        }
      }
      Next(stream);
    });
  }

  const LoadOptions options_;
  const IssueFn& issue_;
  absl::Time start_, measure_from_, stop_at_;
  std::vector<std::vector<double>> latencies_;
  std::vector<int64_t> errors_;
  std::vector<int64_t> calls_started_;
  std::atomic<int> active_{0};
  std::atomic<int64_t> measured_started_{0};
  absl::Notification all_done_;
  absl::Mutex error_mu_;
  std::string first_error_ ABSL_GUARDED_BY(error_mu_);
  // With max_calls: when the last measured call ended, and whether the limit ended the run.
  absl::Time last_end_ ABSL_GUARDED_BY(error_mu_) = absl::InfinitePast();
  bool limit_reached_ ABSL_GUARDED_BY(error_mu_) = false;
};

}  // namespace

LoadResult RunLoad(const LoadOptions& options, const IssueFn& issue) {
  Run run(options, issue);
  return run.Execute();
}

std::vector<std::shared_ptr<grpc::Channel>> MakeChannels(const std::string& target, int channels) {
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    // A distinct argument per channel stops gRPC from sharing one subchannel (connection).
    args.SetInt("bench.channel_index", i);
    out.push_back(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }
  return out;
}

}  // namespace bench
