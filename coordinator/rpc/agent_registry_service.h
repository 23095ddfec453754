// gRPC face of AgentRegistryStore: coordinator.v1.AgentRegistry. Thin, on the work pool.
#ifndef COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_
#define COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_

#include "common/thread_pool.h"
#include "coordinator/store/agent_registry_store.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"

namespace coordinator {

class AgentRegistryServiceImpl final : public v1::AgentRegistry::CallbackService {
 public:
  AgentRegistryServiceImpl(AgentRegistryStore* agents, common::ThreadPool* pool)
      : agents_(agents), pool_(pool) {}

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
  common::ThreadPool* pool_;    // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_AGENT_REGISTRY_SERVICE_H_
