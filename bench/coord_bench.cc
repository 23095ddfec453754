// coord_bench: drives one coordinator workload (bench/workloads.h) at one or more concurrencies
// and prints a line of JSON per measurement (throughput, latency percentiles, errors).
// bench/run.sh starts the coordinators and the peers and turns these lines into
// bench/RESULTS.md.
//
//   coord_bench --target=127.0.0.1:50051 --workload=fail --concurrency=1,16,64
//
// Workloads (the numbering of bench/RESULTS.md):
//   fail     W1: record-failure on distinct tasks (--tasks are created first)
//   attempt  W2: increment-attempt on one task
//   history  W3: append to a conversation; the p50 of --point_calls appends to conversations
//                of each of --sizes messages (measured in turns), then the concurrencies at the
//                last size
//   append   W3 at a fixed size: --history messages are appended first
//   get      W4: get-context at random among --contexts contexts (created over RPCs unless
//                --create=false, e.g. after bench_bulk_load)
//   ping     the floor: grpc.health.v1.Health/Check of the whole server (SERVING or a failure)
//   a2a      W5: blocking SendMessage to --tenant (empty: the target is the agent itself);
//            with --binding=jsonrpc, a SendMessage JSON-RPC call POSTed to --url instead (one
//            thread and keep-alive connection per stream; --target and --tenant are unused)
//   serving  waits until the target's health check answers SERVING and prints how long that
//            took since --since_unix_ns (when the caller started the server)
// Exit code 1 when any measured call failed or a measurement completed no call.
#include <algorithm>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/loadgen.h"
#include "bench/workloads.h"
#include "common/mutex_mode.h"
#include "grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(std::string, workload, "fail",
          "fail | attempt | history | append | get | ping | a2a | serving | etcd_put (the "
          "target is an etcd member)");
ABSL_FLAG(std::string, concurrency, "1,16,64", "comma-separated stream counts");
ABSL_FLAG(int, channels, 4, "gRPC channels (connections) the streams are spread over");
ABSL_FLAG(double, warmup_seconds, 1, "warm-up before each measurement");
ABSL_FLAG(double, seconds, 5, "measured time per concurrency");
ABSL_FLAG(int64_t, tasks, 1024, "fail: tasks the failures are spread over");
ABSL_FLAG(int64_t, history, 0, "append: messages appended to the conversation before measuring");
ABSL_FLAG(std::string, sizes, "10,10000,100000", "history: conversation lengths to measure at");
ABSL_FLAG(int64_t, point_calls, 1000, "history: appends measured at each size (concurrency 1)");
ABSL_FLAG(int64_t, contexts, 100000, "get: contexts to read among");
ABSL_FLAG(bool, create, true, "get: create the contexts first over RPCs");
ABSL_FLAG(std::string, tenant, "", "a2a: the agent's tenant at the target");
ABSL_FLAG(std::string, binding, "grpc",
          "a2a: grpc (A2AService at --target) or jsonrpc (the JSON-RPC binding at --url)");
ABSL_FLAG(std::string, url, "",
          "a2a with --binding=jsonrpc: the agent's JSON-RPC URL, e.g. "
          "http://127.0.0.1:8080/agents/echo (no default)");
ABSL_FLAG(std::string, label, "", "a2a: name of this measurement in the output (e.g. direct)");
ABSL_FLAG(int64_t, value_bytes, 256, "etcd_put: bytes of each value");
ABSL_FLAG(std::string, run_id, "bench", "prefix of the ids this run creates or reads");
ABSL_FLAG(int64_t, since_unix_ns, 0, "serving: when the server process was started");
ABSL_FLAG(int, cpu_pid, 0,
          "the server's process id (on this machine): each measurement reports its CPU time "
          "per successful call in the window, cpu_us_per_call");
ABSL_FLAG(int, peer_cpu_pid, 0,
          "with --cpu_pid: a second process (the agent behind a gateway) whose CPU time per "
          "successful call is reported as peer_cpu_us_per_call; the load generator's own is "
          "client_cpu_us_per_call");
ABSL_FLAG(std::string, etcd_metrics, "",
          "host:port of each etcd member's client URL, separated by commas: each measurement "
          "also reports the KV requests the members handled per successful call in the window, "
          "etcd_requests_per_call (from their /metrics)");
ABSL_FLAG(double, timeout_seconds, 60, "serving: how long to wait");

namespace {

bool ParseList(const std::string& text, std::vector<int64_t>* out) {
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) return false;
    out->push_back(v);
  }
  return !out->empty();
}

// Prints one measurement; false when it had errors or no successful call.
bool Report(const std::string& workload, const std::string& detail, int concurrency,
            const bench::LoadResult& r) {
  std::string cpu;
  const std::pair<const char*, double> cpus[] = {{"cpu_us_per_call", r.cpu_seconds},
                                                 {"peer_cpu_us_per_call", r.peer_cpu_seconds},
                                                 {"client_cpu_us_per_call", r.client_cpu_seconds}};
  for (const auto& [name, seconds] : cpus) {
    if (seconds >= 0 && r.calls > 0) {
      absl::StrAppendFormat(&cpu, ",\"%s\":%.1f", name, seconds * 1e6 / r.calls);
    }
  }
  if (r.counter_delta >= 0 && r.calls > 0) {
    absl::StrAppendFormat(&cpu, ",\"etcd_requests_per_call\":%.3f", r.counter_delta / r.calls);
  }
  std::cout << absl::StrFormat(
                   "{\"workload\":\"%s\",%s\"concurrency\":%d,\"calls\":%d,\"errors\":%d,"
                   "\"seconds\":%.3f,\"throughput\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                   "\"p999_us\":%.1f%s}",
                   workload, detail, concurrency, r.calls, r.errors, r.seconds, r.throughput,
                   r.p50_us, r.p99_us, r.p999_us, cpu)
            << std::endl;
  bool ok = true;
  if (r.errors > 0) {
    std::cerr << "coord_bench: " << workload << ": " << r.errors << " calls failed at concurrency "
              << concurrency << "; first: " << r.first_error << "\n";
    ok = false;
  }
  if (r.calls == 0) {
    std::cerr << "coord_bench: " << workload << ": no call succeeded at concurrency " << concurrency
              << "\n";
    ok = false;
  }
  return ok;
}

bench::LoadOptions Options(int concurrency) {
  bench::LoadOptions options;
  options.concurrency = concurrency;
  options.warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds));
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  options.cpu_pid = absl::GetFlag(FLAGS_cpu_pid);
  options.peer_cpu_pid = absl::GetFlag(FLAGS_peer_cpu_pid);
  if (const std::string members = absl::GetFlag(FLAGS_etcd_metrics); !members.empty()) {
    options.window_counter = [list = std::vector<std::string>(absl::StrSplit(members, ','))] {
      return bench::EtcdKvRequests(list);
    };
  }
  return options;
}

bool RunConcurrencies(const std::string& workload, const std::string& detail,
                      const std::vector<int64_t>& concurrencies, const bench::IssueFn& issue) {
  bool ok = true;
  for (int64_t c : concurrencies) {
    ok &= Report(workload, detail, static_cast<int>(c),
                 bench::RunLoad(Options(static_cast<int>(c)), issue));
  }
  return ok;
}

// W3: appends to conversations of different lengths. One conversation per size is filled
// first (at concurrency 64); then the sizes are measured in turns, --point_calls / kTurns
// appends each per turn at concurrency 1, so that a change in the machine's load hits every
// size alike. Then the concurrencies run on the longest conversation.
bool RunHistory(bench::Stubs& stubs, const std::vector<int64_t>& concurrencies) {
  constexpr int kTurns = 5;
  std::vector<int64_t> sizes;
  if (!ParseList(absl::GetFlag(FLAGS_sizes), &sizes)) {
    std::cerr << "coord_bench: --sizes takes positive numbers\n";
    return false;
  }
  std::sort(sizes.begin(), sizes.end());
  const std::string run = absl::GetFlag(FLAGS_run_id);
  std::vector<bench::IssueFn> appends;
  for (int64_t size : sizes) {
    appends.push_back(bench::AppendMessageWorkload(stubs, absl::StrCat(run, "-convo-", size)));
    if (absl::Status s = bench::RunCount(size, 64, appends.back()); !s.ok()) {
      std::cerr << "coord_bench: filling a conversation to " << size << ": " << s << "\n";
      return false;
    }
  }
  std::vector<bench::LoadResult> points(sizes.size());
  for (int turn = 0; turn < kTurns; ++turn) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      bench::LoadOptions options;
      options.concurrency = 1;
      options.warmup = absl::ZeroDuration();
      options.duration = absl::Seconds(60);
      options.max_calls = std::max<int64_t>(1, absl::GetFlag(FLAGS_point_calls) / kTurns);
      bench::LoadResult r = bench::RunLoad(options, appends[i]);
      bench::LoadResult& p = points[i];
      p.calls += r.calls;
      p.errors += r.errors;
      p.seconds += r.seconds;
      if (p.first_error.empty()) p.first_error = r.first_error;
      p.latencies_us.insert(p.latencies_us.end(), r.latencies_us.begin(), r.latencies_us.end());
    }
  }
  bool ok = true;
  for (size_t i = 0; i < sizes.size(); ++i) {
    bench::LoadResult& p = points[i];
    std::sort(p.latencies_us.begin(), p.latencies_us.end());
    p.throughput = p.seconds > 0 ? p.calls / p.seconds : 0;
    p.p50_us = bench::Percentile(p.latencies_us, 0.5);
    p.p99_us = bench::Percentile(p.latencies_us, 0.99);
    p.p999_us = bench::Percentile(p.latencies_us, 0.999);
    ok &= Report("history_point", absl::StrFormat("\"history\":%d,", sizes[i]), 1, p);
  }
  return ok && RunConcurrencies("history", absl::StrFormat("\"history\":%d,", sizes.back()),
                                concurrencies, appends.back());
}

// Waits for SERVING; prints the time since --since_unix_ns.
bool RunServing() {
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_seconds));
  int64_t probes = 0;
  while (absl::Now() < deadline) {
    ++probes;
    // A new channel (connection) per probe: a channel whose first connect was refused would
    // wait out gRPC's reconnect backoff (a second or more) and hide when the server came up.
    grpc::ChannelArguments args;
    args.SetInt("bench.probe", static_cast<int>(probes));
    auto health = grpc::health::v1::Health::NewStub(grpc::CreateCustomChannel(
        absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status s = health->Check(&context, request, &response);
    if (s.ok() && response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      const int64_t now_ns = absl::ToUnixNanos(absl::Now());
      const int64_t since = absl::GetFlag(FLAGS_since_unix_ns);
      std::cout << absl::StrFormat("{\"workload\":\"serving\",\"probes\":%d,\"serving_ms\":%.1f}",
                                   probes, since > 0 ? (now_ns - since) / 1e6 : -1.0)
                << std::endl;
      return true;
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  std::cerr << "coord_bench: " << absl::GetFlag(FLAGS_target) << " was not SERVING after "
            << absl::GetFlag(FLAGS_timeout_seconds) << " s\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  common::SkipMutexDeadlockGraph();
  absl::SetProgramUsageMessage(
      "coord_bench --target=HOST:PORT --workload=fail|attempt|history|append|get|ping|a2a|serving");
  absl::ParseCommandLine(argc, argv);
  std::vector<int64_t> concurrencies;
  if (!ParseList(absl::GetFlag(FLAGS_concurrency), &concurrencies)) {
    std::cerr << "coord_bench: --concurrency takes positive numbers\n";
    return 2;
  }
  const std::string workload = absl::GetFlag(FLAGS_workload);
  const std::string binding = absl::GetFlag(FLAGS_binding);
  if (binding != "grpc" && binding != "jsonrpc") {
    std::cerr << "coord_bench: --binding is grpc or jsonrpc, not " << binding << "\n";
    return 2;
  }
  if (binding == "jsonrpc") {
    if (workload != "a2a") {
      std::cerr << "coord_bench: --binding=jsonrpc is for --workload=a2a only\n";
      return 2;
    }
    if (absl::GetFlag(FLAGS_url).empty()) {
      std::cerr << "coord_bench: --binding=jsonrpc needs --url\n";
      return 2;
    }
    absl::StatusOr<bench::HttpUrl> url = bench::ParseHttpUrl(absl::GetFlag(FLAGS_url));
    if (!url.ok()) {
      std::cerr << "coord_bench: --url: " << url.status().message() << "\n";
      return 2;
    }
    const bool ok = RunConcurrencies(
        workload,
        absl::StrFormat("\"label\":\"%s\",\"binding\":\"jsonrpc\",", absl::GetFlag(FLAGS_label)),
        concurrencies, bench::JsonRpcSendMessageWorkload(*std::move(url)));
    return ok ? 0 : 1;
  }
  if (workload == "serving") return RunServing() ? 0 : 1;

  auto channels = bench::MakeChannels(absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_channels));
  bench::Stubs stubs(channels);
  const std::string run = absl::GetFlag(FLAGS_run_id);
  bool ok = true;
  if (workload == "fail") {
    absl::StatusOr<std::vector<std::string>> ids =
        bench::InitTasks(stubs, run, absl::GetFlag(FLAGS_tasks));
    if (!ids.ok()) {
      std::cerr << "coord_bench: creating the tasks: " << ids.status() << "\n";
      return 1;
    }
    const std::string detail = absl::StrFormat("\"tasks\":%d,", ids->size());
    ok = RunConcurrencies(workload, detail, concurrencies,
                          bench::RecordFailureWorkload(stubs, *std::move(ids)));
  } else if (workload == "attempt") {
    absl::StatusOr<std::vector<std::string>> ids = bench::InitTasks(stubs, run, 1);
    if (!ids.ok()) {
      std::cerr << "coord_bench: creating the task: " << ids.status() << "\n";
      return 1;
    }
    ok = RunConcurrencies(workload, "", concurrencies,
                          bench::IncrementAttemptWorkload(stubs, (*ids)[0]));
  } else if (workload == "history") {
    ok = RunHistory(stubs, concurrencies);
  } else if (workload == "append") {
    bench::IssueFn append = bench::AppendMessageWorkload(stubs, absl::StrCat(run, "-convo"));
    if (absl::Status s = bench::RunCount(absl::GetFlag(FLAGS_history), 64, append); !s.ok()) {
      std::cerr << "coord_bench: filling the conversation: " << s << "\n";
      return 1;
    }
    ok =
        RunConcurrencies(workload, absl::StrFormat("\"history\":%d,", absl::GetFlag(FLAGS_history)),
                         concurrencies, append);
  } else if (workload == "get") {
    const int64_t n = absl::GetFlag(FLAGS_contexts);
    if (absl::GetFlag(FLAGS_create)) {
      if (absl::Status s = bench::RunCount(n, 64, bench::CreateContextWorkload(stubs, run));
          !s.ok()) {
        std::cerr << "coord_bench: creating the contexts: " << s << "\n";
        return 1;
      }
    }
    ok = RunConcurrencies(workload, absl::StrFormat("\"contexts\":%d,", n), concurrencies,
                          bench::GetContextWorkload(stubs, run, n));
  } else if (workload == "etcd_put") {
    const int64_t bytes = absl::GetFlag(FLAGS_value_bytes);
    if (bytes < 0 || bytes > (1 << 20)) {
      std::cerr << "coord_bench: --value_bytes must be 0 to 1048576\n";
      return 2;
    }
    ok = RunConcurrencies(
        workload, absl::StrFormat("\"value_bytes\":%d,", bytes), concurrencies,
        bench::EtcdPutWorkload(stubs, absl::StrCat("/bench/", run, "/raw-put/"), bytes));
  } else if (workload == "ping") {
    ok = RunConcurrencies(workload, "", concurrencies, bench::PingWorkload(stubs));
  } else if (workload == "a2a") {
    const std::string label = absl::GetFlag(FLAGS_label);
    ok = RunConcurrencies(
        workload,
        absl::StrFormat("\"label\":\"%s\",\"tenant\":\"%s\",", label, absl::GetFlag(FLAGS_tenant)),
        concurrencies, bench::SendMessageWorkload(stubs, absl::GetFlag(FLAGS_tenant)));
  } else {
    std::cerr << "coord_bench: unknown --workload " << workload << "\n";
    return 2;
  }
  return ok ? 0 : 1;
}
