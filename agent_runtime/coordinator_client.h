// Calls from an agent to the coordinator that survive a coordinator restart: a channel that
// reconnects quickly, a retry loop for calls that fail with UNAVAILABLE, and "send a message to
// another agent through the gateway and wait for its task to end". Agents keep no state that
// matters in memory, so every call here is safe to repeat.
#ifndef AGENT_RUNTIME_COORDINATOR_CLIENT_H_
#define AGENT_RUNTIME_COORDINATOR_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_client.h"
#include "common/grpc_retry.h"
#include "grpcpp/grpcpp.h"

namespace agent_runtime {

// A channel to the coordinator that reconnects within a second after a restart (gRPC's default
// reconnect backoff grows to two minutes), with `credentials` (token, TLS root) on every call.
std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& target, const common::ClientCredentialOptions& credentials = {});

// The clients' retry policy (common/grpc_retry.h), which the agents' calls to the coordinator use.
using common::CallWithRetry;
using common::RetryOptions;

// Sends messages to agents through the coordinator's A2A gateway and waits for their tasks.
class GatewayClient {
 public:
  GatewayClient(std::shared_ptr<grpc::Channel> channel, RetryOptions options);

  // Sends `message` to agent `tenant` (return_immediately) and returns the coordinator's task.
  [[nodiscard]] absl::StatusOr<lf::a2a::v1::Task> Send(const std::string& tenant,
                                                       const lf::a2a::v1::Message& message,
                                                       const std::function<bool()>& stop = nullptr);

  // Polls the task until it reaches a terminal or interrupted state, `timeout` passes
  // (DEADLINE_EXCEEDED) or `stop` returns true (CANCELLED). Survives coordinator restarts.
  [[nodiscard]] absl::StatusOr<lf::a2a::v1::Task> WaitForTask(
      const std::string& tenant, const std::string& task_id, absl::Duration timeout,
      const std::function<bool()>& stop = nullptr);

  // Send, then WaitForTask.
  [[nodiscard]] absl::StatusOr<lf::a2a::v1::Task> SendAndWait(
      const std::string& tenant, const lf::a2a::v1::Message& message, absl::Duration timeout,
      const std::function<bool()>& stop = nullptr);

  lf::a2a::v1::A2AService::Stub* stub() { return stub_.get(); }
  const RetryOptions& options() const { return options_; }

 private:
  std::unique_ptr<lf::a2a::v1::A2AService::Stub> stub_;
  RetryOptions options_;
};

// The first text part of a message ("" when none).
std::string FirstText(const lf::a2a::v1::Message& message);
// Every text part of a message, joined by newlines.
std::string AllText(const lf::a2a::v1::Message& message);
// The text of a task's status message ("" when none).
std::string StatusText(const lf::a2a::v1::Task& task);

}  // namespace agent_runtime

#endif  // AGENT_RUNTIME_COORDINATOR_CLIENT_H_
