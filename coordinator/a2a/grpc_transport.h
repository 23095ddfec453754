// The gRPC binding of the agent transport (agent_transport.h): lf.a2a.v1.A2AService called with
// the generated stub, the answer read ahead on gRPC's callback threads, and "a2a-version: 1.0"
// on every call.
#ifndef COORDINATOR_A2A_GRPC_TRANSPORT_H_
#define COORDINATOR_A2A_GRPC_TRANSPORT_H_

#include <memory>
#include <string>

#include "coordinator/a2a/agent_transport.h"
#include "grpcpp/grpcpp.h"

namespace coordinator {

class GrpcAgentTransport final : public AgentTransport {
 public:
  // `tenant` goes into every request ("" for none).
  GrpcAgentTransport(std::shared_ptr<grpc::Channel> channel, std::string tenant)
      : channel_(std::move(channel)), tenant_(std::move(tenant)) {}

  std::unique_ptr<AgentCall> SendStreaming(const a2apb::SendMessageRequest& request,
                                           absl::Time deadline) override;
  absl::StatusOr<a2apb::Task> CancelTask(const a2apb::CancelTaskRequest& request,
                                         absl::Time deadline) override;
  absl::StatusOr<a2apb::Task> GetTask(const a2apb::GetTaskRequest& request,
                                      absl::Time deadline) override;
  std::unique_ptr<AgentCall> Subscribe(const a2apb::SubscribeToTaskRequest& request,
                                       absl::Time deadline) override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  const std::string tenant_;
};

// A channel to an agent's gRPC endpoint: host:port in plaintext, or https://host:port over TLS
// with the system's roots. It reconnects within a second when the agent comes back.
std::shared_ptr<grpc::Channel> NewAgentChannel(const std::string& endpoint);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_GRPC_TRANSPORT_H_
