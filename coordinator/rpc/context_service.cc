#include "coordinator/rpc/context_service.h"

#include "common/status_macros.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* ContextServiceImpl::CreateContext(grpc::CallbackServerContext* context,
                                                            const v1::CreateContextRequest* request,
                                                            v1::TaskContext* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) -> absl::StatusOr<v1::TaskContext> {
                       v1::TaskContext create = request->context();
                       RETURN_IF_ERROR(CheckNewContext(caller, &create));
                       return contexts_->Create(create);
                     });
}

grpc::ServerUnaryReactor* ContextServiceImpl::GetContext(grpc::CallbackServerContext* context,
                                                         const v1::GetContextRequest* request,
                                                         v1::TaskContext* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) -> absl::StatusOr<v1::TaskContext> {
                       ASSIGN_OR_RETURN(v1::TaskContext found,
                                        contexts_->Get(request->context_id()));
                       RETURN_IF_ERROR(CheckContextRead(caller, found));
                       return found;
                     });
}

grpc::ServerUnaryReactor* ContextServiceImpl::UpdateContext(grpc::CallbackServerContext* context,
                                                            const v1::UpdateContextRequest* request,
                                                            v1::TaskContext* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) -> absl::StatusOr<v1::TaskContext> {
                       RETURN_IF_ERROR(CheckContextUpdate(caller, *request));
                       return contexts_->Update(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* ContextServiceImpl::DeleteContext(grpc::CallbackServerContext* context,
                                                            const v1::DeleteContextRequest* request,
                                                            google::protobuf::Empty* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<google::protobuf::Empty> {
        absl::Status s =
            contexts_->Delete(request->context_id(), request->version(), AccessOf(caller));
        if (!s.ok()) return s;
        return google::protobuf::Empty();
      });
}

grpc::ServerUnaryReactor* ContextServiceImpl::ListContexts(grpc::CallbackServerContext* context,
                                                           const v1::ListContextsRequest* request,
                                                           v1::ListContextsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       v1::ListContextsRequest list = *request;
                       absl::Status allowed = CheckContextList(caller, list.mutable_agent());
                       if (!allowed.ok()) return absl::StatusOr<v1::ListContextsResponse>(allowed);
                       return contexts_->List(list);
                     });
}

grpc::ServerUnaryReactor* ContextServiceImpl::RecordCommand(grpc::CallbackServerContext* context,
                                                            const v1::RecordCommandRequest* request,
                                                            v1::RecordCommandResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::RecordCommandResponse> {
        return contexts_->RecordCommand(*request, AccessOf(caller));
      });
}

grpc::ServerUnaryReactor* ContextServiceImpl::ListCommands(grpc::CallbackServerContext* context,
                                                           const v1::ListCommandsRequest* request,
                                                           v1::ListCommandsResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::ListCommandsResponse> {
        if (caller.scoped()) {
          ASSIGN_OR_RETURN(v1::TaskContext found, contexts_->Get(request->context_id()));
          RETURN_IF_ERROR(CheckContextRead(caller, found));
        }
        return contexts_->ListCommands(*request);
      });
}

}  // namespace coordinator
