#include "coordinator/context_service.h"

#include "coordinator/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* ContextServiceImpl::CreateContext(grpc::CallbackServerContext* context,
                                                            const v1::CreateContextRequest* request,
                                                            v1::TaskContext* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->Create(request->context()); });
}

grpc::ServerUnaryReactor* ContextServiceImpl::GetContext(grpc::CallbackServerContext* context,
                                                         const v1::GetContextRequest* request,
                                                         v1::TaskContext* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->Get(request->context_id()); });
}

grpc::ServerUnaryReactor* ContextServiceImpl::UpdateContext(grpc::CallbackServerContext* context,
                                                            const v1::UpdateContextRequest* request,
                                                            v1::TaskContext* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->Update(*request); });
}

grpc::ServerUnaryReactor* ContextServiceImpl::DeleteContext(grpc::CallbackServerContext* context,
                                                            const v1::DeleteContextRequest* request,
                                                            google::protobuf::Empty* response) {
  return HandleUnary(
      context, pool_, response, [this, request]() -> absl::StatusOr<google::protobuf::Empty> {
        absl::Status s = contexts_->Delete(request->context_id(), request->version());
        if (!s.ok()) return s;
        return google::protobuf::Empty();
      });
}

grpc::ServerUnaryReactor* ContextServiceImpl::ListContexts(grpc::CallbackServerContext* context,
                                                           const v1::ListContextsRequest* request,
                                                           v1::ListContextsResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->List(*request); });
}

grpc::ServerUnaryReactor* ContextServiceImpl::RecordCommand(grpc::CallbackServerContext* context,
                                                            const v1::RecordCommandRequest* request,
                                                            v1::RecordCommandResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->RecordCommand(*request); });
}

grpc::ServerUnaryReactor* ContextServiceImpl::ListCommands(grpc::CallbackServerContext* context,
                                                           const v1::ListCommandsRequest* request,
                                                           v1::ListCommandsResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return contexts_->ListCommands(*request); });
}

}  // namespace coordinator
