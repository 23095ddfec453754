#include "coordinator/rpc/agent_registry_service.h"

#include "common/status_macros.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* AgentRegistryServiceImpl::RegisterAgent(
    grpc::CallbackServerContext* context, const v1::RegisterAgentRequest* request,
    v1::Agent* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) -> absl::StatusOr<v1::Agent> {
                       RETURN_IF_ERROR(CheckAgentName(caller, request->agent().name()));
                       if (!resolver_) return agents_->Register(request->agent());
                       ASSIGN_OR_RETURN(const v1::Agent agent, resolver_(request->agent()));
                       return agents_->Register(agent);
                     });
}

grpc::ServerUnaryReactor* AgentRegistryServiceImpl::GetAgent(grpc::CallbackServerContext* context,
                                                             const v1::GetAgentRequest* request,
                                                             v1::Agent* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request] { return agents_->Get(request->name()); });
}

grpc::ServerUnaryReactor* AgentRegistryServiceImpl::ListAgents(grpc::CallbackServerContext* context,
                                                               const v1::ListAgentsRequest* request,
                                                               v1::ListAgentsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return agents_->List(*request); });
}

grpc::ServerUnaryReactor* AgentRegistryServiceImpl::DeleteAgent(
    grpc::CallbackServerContext* context, const v1::DeleteAgentRequest* request,
    google::protobuf::Empty* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<google::protobuf::Empty> {
        RETURN_IF_ERROR(CheckAgentName(caller, request->name()));
        absl::Status s = agents_->Delete(request->name());
        if (!s.ok()) return s;
        return google::protobuf::Empty();
      });
}

}  // namespace coordinator
