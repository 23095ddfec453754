// The gRPC binding of the agent transport (agent_transport.h), in A2A 1.0 (lf.a2a.v1.A2AService,
// "a2a-version: 1.0" on every call) or 0.3 (a2a.v1.A2AService, its answers read as 1.0 by
// a2a_protocol/v03_proto.h), called with the generated stubs, the answer read ahead on gRPC's
// callback threads.
#ifndef COORDINATOR_A2A_GRPC_TRANSPORT_H_
#define COORDINATOR_A2A_GRPC_TRANSPORT_H_

#include <memory>
#include <string>

#include "coordinator/a2a/agent_transport.h"
#include "grpcpp/grpcpp.h"

namespace coordinator {

class GrpcAgentTransport final : public AgentTransport {
 public:
  enum class Version { k10, k03 };

  // `tenant` goes into every request ("" for none; 0.3 has none). A 0.3 agent that does not
  // `stream` (its card's capability, off by default in 0.3) gets the unary SendMessage only.
  GrpcAgentTransport(std::shared_ptr<grpc::Channel> channel, std::string tenant,
                     Version version = Version::k10, bool streams = true)
      : channel_(std::move(channel)),
        tenant_(std::move(tenant)),
        version_(version),
        streams_(streams) {}

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
  const Version version_;
  const bool streams_;
};

// A channel to an agent's gRPC endpoint: host:port in plaintext, or https://host:port over TLS
// with the system's roots. It reconnects within a second when the agent comes back.
std::shared_ptr<grpc::Channel> NewAgentChannel(const std::string& endpoint);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_GRPC_TRANSPORT_H_
