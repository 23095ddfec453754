// gRPC face of ContextStore: coordinator.v1.ContextService. Thin: each handler hands the request
// to the store (coordinator/rpc/unary_handler.h) and maps the result.
#ifndef COORDINATOR_RPC_CONTEXT_SERVICE_H_
#define COORDINATOR_RPC_CONTEXT_SERVICE_H_

#include <string>

#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/v1/context.grpc.pb.h"

namespace coordinator {

class ContextServiceImpl final : public v1::ContextService::CallbackService {
 public:
  ContextServiceImpl(ContextStore* contexts, CallRunner* calls)
      : contexts_(contexts), calls_(calls) {}

  grpc::ServerUnaryReactor* CreateContext(grpc::CallbackServerContext* context,
                                          const v1::CreateContextRequest* request,
                                          v1::TaskContext* response) override;
  grpc::ServerUnaryReactor* GetContext(grpc::CallbackServerContext* context,
                                       const v1::GetContextRequest* request,
                                       v1::TaskContext* response) override;
  grpc::ServerUnaryReactor* UpdateContext(grpc::CallbackServerContext* context,
                                          const v1::UpdateContextRequest* request,
                                          v1::TaskContext* response) override;
  grpc::ServerUnaryReactor* DeleteContext(grpc::CallbackServerContext* context,
                                          const v1::DeleteContextRequest* request,
                                          google::protobuf::Empty* response) override;
  grpc::ServerUnaryReactor* ListContexts(grpc::CallbackServerContext* context,
                                         const v1::ListContextsRequest* request,
                                         v1::ListContextsResponse* response) override;
  grpc::ServerUnaryReactor* RecordCommand(grpc::CallbackServerContext* context,
                                          const v1::RecordCommandRequest* request,
                                          v1::RecordCommandResponse* response) override;
  grpc::ServerUnaryReactor* ListCommands(grpc::CallbackServerContext* context,
                                         const v1::ListCommandsRequest* request,
                                         v1::ListCommandsResponse* response) override;

 private:
  ContextStore* contexts_;  // not owned
  CallRunner* calls_;       // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_CONTEXT_SERVICE_H_
