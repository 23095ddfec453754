// A closed-loop gRPC load generator: N concurrent streams, each issuing its next call from the
// completion of the previous one (callback API, no thread per stream), spread over several
// channels. It warms up, then measures for a fixed time, and reports throughput and latency
// percentiles. It is honest: every call's status is checked, and errors are counted and
// reported; a run with errors says so.
#ifndef BENCH_LOADGEN_H_
#define BENCH_LOADGEN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace bench {

// Issues one call for stream `stream`, sequence `seq`, and invokes `done` with its status when
// the call completes (from any thread).
using IssueFn =
    std::function<void(int stream, int64_t seq, std::function<void(grpc::Status)> done)>;

struct LoadOptions {
  int concurrency = 1;  // concurrent streams
  absl::Duration warmup = absl::Seconds(1);
  absl::Duration duration = absl::Seconds(5);
  // When positive, the measured window also ends once this many calls were started in it
  // (W3 measures a few hundred appends at each history length). Default 0: no limit.
  int64_t max_calls = 0;
  // When positive: the process whose CPU time (user and system, all its threads) in the
  // measured window is reported, LoadResult::cpu_seconds (the server under test).
  int cpu_pid = 0;
  // When positive: a second process whose CPU time in the window is reported,
  // LoadResult::peer_cpu_seconds (the agent behind a gateway under test). Default 0: none.
  int peer_cpu_pid = 0;
  // When set: a counter sampled when the measured window opens and when it closes,
  // LoadResult::counter_delta (etcd's requests: coord_bench --etcd_metrics).
  std::function<absl::StatusOr<double>()> window_counter;
};

struct LoadResult {
  int concurrency = 0;
  int64_t calls = 0;   // successful calls in the measured window
  int64_t errors = 0;  // failed calls in the measured window
  std::string first_error;
  double seconds = 0;     // length of the measured window (shorter when max_calls ended it)
  double throughput = 0;  // successful calls per second
  double p50_us = 0, p99_us = 0, p999_us = 0;
  // CPU time of LoadOptions::cpu_pid in the measured window; negative when not measured.
  double cpu_seconds = -1;
  // CPU time of LoadOptions::peer_cpu_pid in the window; negative when not measured.
  double peer_cpu_seconds = -1;
  // This process's own CPU time in the window (the load generator, every thread): what a call
  // costs its client. Measured whenever cpu_pid is; negative otherwise.
  double client_cpu_seconds = -1;
  // How much LoadOptions::window_counter grew in the window; negative when not measured.
  double counter_delta = -1;
  std::vector<double> latencies_us;  // of the successful calls, sorted
};

// The CPU time (user + system, every thread) process `pid` has used so far, from
// /proc/<pid>/stat (clock-tick resolution).
[[nodiscard]] absl::StatusOr<double> ProcessCpuSeconds(int pid);

// Percentile `q` (0..1) of sorted values; 0 when there are none.
double Percentile(const std::vector<double>& sorted, double q);

[[nodiscard]] LoadResult RunLoad(const LoadOptions& options, const IssueFn& issue);

// `channels` independent channels to `target` (separate TCP connections).
std::vector<std::shared_ptr<grpc::Channel>> MakeChannels(const std::string& target, int channels);

}  // namespace bench

#endif  // BENCH_LOADGEN_H_
