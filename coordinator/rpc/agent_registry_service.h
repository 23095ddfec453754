// gRPC face of AgentRegistryStore: coordinator.v1.AgentRegistry. Thin
// (coordinator/rpc/unary_handler.h); RegisterAgent runs on the work pool (a registration by card
// URL fetches the card there: the resolver blocks on an outbound call).
#ifndef COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_
#define COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"

namespace coordinator {

class AgentRegistryServiceImpl final : public v1::AgentRegistry::CallbackService {
 public:
  AgentRegistryServiceImpl(AgentRegistryStore* agents, CallRunner* calls)
      : agents_(agents), calls_(calls) {}

  // What turns a RegisterAgent request into the agent to store (the A2A gateway's
  // ResolveRegistration: fetches the card of an agent registered by card URL). Called on the
  // work pool; an error is the call's answer and nothing is stored. Unset (the default): the
  // request is stored as it came. Set before serving.
  using Resolver = std::function<absl::StatusOr<v1::Agent>(const v1::Agent&)>;
  void set_resolver(Resolver resolver) { resolver_ = std::move(resolver); }

  grpc::ServerUnaryReactor* RegisterAgent(grpc::CallbackServerContext* context,
                                          const v1::RegisterAgentRequest* request,
                                          v1::Agent* response) override;
  grpc::ServerUnaryReactor* GetAgent(grpc::CallbackServerContext* context,
                                     const v1::GetAgentRequest* request,
                                     v1::Agent* response) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext* context,
                                       const v1::ListAgentsRequest* request,
                                       v1::ListAgentsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteAgent(grpc::CallbackServerContext* context,
                                        const v1::DeleteAgentRequest* request,
                                        google::protobuf::Empty* response) override;

 private:
  AgentRegistryStore* agents_;  // not owned
  CallRunner* calls_;           // not owned
  Resolver resolver_;
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_
