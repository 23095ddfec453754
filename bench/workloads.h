// The coordinator workloads of bench/RESULTS.md as load-generator calls (bench/loadgen.h), and
// the set-up each needs, done through the coordinator's own RPCs. coord_bench runs them from the
// command line; bench/workloads_test.cc runs them briefly against a test coordinator so that
// they keep working.
//
//   W1 RecordFailureWorkload   durable update: record-failure on distinct tasks
//   W2 IncrementAttemptWorkload contention: increment-attempt on one task
//   W3 AppendMessageWorkload   history growth: append to one conversation
//   W4 GetContextWorkload      read: get-context at random among N contexts
//   PingWorkload               the floor: a health check, the cheapest call the server answers
//   W5 SendMessageWorkload     A2A: SendMessage (blocking) to an agent that completes at once
//      JsonRpcSendMessageWorkload the same over the JSON-RPC binding (HTTP POST, keep-alive)
//   EtcdPutWorkload            the raw peer of W1 on etcd: one etcd Put, no coordinator
#ifndef BENCH_WORKLOADS_H_
#define BENCH_WORKLOADS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/loadgen.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "etcd/v3/rpc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace bench {

// One stub per service per channel; stream `s` uses channel `s % channels`.
struct Stubs {
  explicit Stubs(const std::vector<std::shared_ptr<grpc::Channel>>& channels);

  std::vector<std::unique_ptr<coordinator::v1::ContextService::Stub>> contexts;
  std::vector<std::unique_ptr<coordinator::v1::ConversationService::Stub>> conversations;
  std::vector<std::unique_ptr<coordinator::v1::TaskStateService::Stub>> tasks;
  std::vector<std::unique_ptr<lf::a2a::v1::A2AService::Stub>> a2a;
  std::vector<std::unique_ptr<grpc::health::v1::Health::Stub>> health;
  // When the target is an etcd member (EtcdPutWorkload).
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> etcd_kv;
};

// Runs `issue` for seq = 0..count-1 over `concurrency` streams (set-up work, not measured).
// ALREADY_EXISTS counts as done (a rerun on the same data). Fails with the first other error.
[[nodiscard]] absl::Status RunCount(int64_t count, int concurrency, const IssueFn& issue);

// The id of context number `i` of a run (W4, and the 1,000,000-context resource figures).
std::string BenchContextId(const std::string& prefix, int64_t i);

// Creates `n` retry-state tasks (InitTask) and returns their ids, in order.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> InitTasks(Stubs& stubs,
                                                                 const std::string& prefix,
                                                                 int64_t n);

// W1: RecordFailure; call `seq` of stream `s` goes to task (s + kDistinctStride * seq) mod n,
// so streams never share a task (for up to kDistinctStride streams when n is a multiple of it).
inline constexpr int kDistinctStride = 64;
IssueFn RecordFailureWorkload(Stubs& stubs, std::vector<std::string> task_ids);

// W2: IncrementAttempt on one task.
IssueFn IncrementAttemptWorkload(Stubs& stubs, std::string task_id);

// W3: AppendMessage to one conversation (an agent message of about 40 bytes, 17 tokens).
IssueFn AppendMessageWorkload(Stubs& stubs, std::string context_id);

// CreateContext of BenchContextId(prefix, seq): the set-up of W4 over RPCs.
IssueFn CreateContextWorkload(Stubs& stubs, std::string prefix);

// W4: GetContext of BenchContextId(prefix, i), i uniform in [0, n).
IssueFn GetContextWorkload(Stubs& stubs, std::string prefix, int64_t n);

// The floor of every workload above: grpc.health.v1.Health/Check of the whole server, which
// passes the same transport and interceptors as any call and then only reads a status. A call
// succeeds only when the answer is SERVING.
IssueFn PingWorkload(Stubs& stubs);

// The raw peer of W1 on etcd (bench/run.sh, part etcd): one Put over etcd's own gRPC API of a
// key per stream and call under `prefix`, of `value_bytes`, to the member at the target. What a
// client of etcd gets without the coordinator: W1 on etcd against it is the coordinator's cost.
IssueFn EtcdPutWorkload(Stubs& stubs, std::string prefix, int64_t value_bytes);

// The KV requests (Range, Txn, Put, of every outcome) the etcd members at `members` (host:port
// of each one's client URL) have handled since they started, summed, from their own /metrics
// (grpc_server_handled_total): sampled around a window, what the calls in it cost the cluster.
absl::StatusOr<double> EtcdKvRequests(const std::vector<std::string>& members);

// W5: a blocking SendMessage of a new task to `tenant` (empty: the server is the agent itself)
// with `a2a-version: 1.0`. A call succeeds only when the answer is a COMPLETED task.
IssueFn SendMessageWorkload(Stubs& stubs, std::string tenant);

// An http:// URL split for an HTTP client: "http://127.0.0.1:8080/agents/echo".
struct HttpUrl {
  std::string host;
  int port = 80;           // when the URL names none
  std::string path = "/";  // when the URL names none
};

// Reads `url` (http:// only, a host, an optional port, an optional path; no query or fragment).
// INVALID_ARGUMENT saying what is wrong.
[[nodiscard]] absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

// W5 over JSON-RPC: a blocking `SendMessage` JSON-RPC call (the same message as
// SendMessageWorkload, `A2A-Version: 1.0`) POSTed to `url`. Each stream has its own thread and
// its own keep-alive HTTP connection (a cpp-httplib client, which blocks), so stream `s`'s call
// runs on its thread and `done` is called from there; the threads stop when the last copy of
// the returned function is destroyed. A call succeeds only when the answer is a JSON-RPC result
// holding a COMPLETED task; a transport failure is UNAVAILABLE, another HTTP status than 200
// UNKNOWN, a JSON-RPC error its own status.
IssueFn JsonRpcSendMessageWorkload(HttpUrl url);

}  // namespace bench

#endif  // BENCH_WORKLOADS_H_
