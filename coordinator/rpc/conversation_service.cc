#include "coordinator/rpc/conversation_service.h"

#include "common/status_macros.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* ConversationServiceImpl::AppendMessage(
    grpc::CallbackServerContext* context, const v1::AppendMessageRequest* request,
    v1::AppendMessageResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::AppendMessageResponse> {
        // An agent writes only the conversation of a context it takes part in, checked by the
        // store inside the append's transaction.
        return conversations_->Append(*request, AccessOf(caller));
      });
}

grpc::ServerUnaryReactor* ConversationServiceImpl::GetConversation(
    grpc::CallbackServerContext* context, const v1::GetConversationRequest* request,
    v1::GetConversationResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::GetConversationResponse> {
        if (caller.scoped()) {
          ASSIGN_OR_RETURN(v1::TaskContext found, contexts_->Get(request->context_id()));
          RETURN_IF_ERROR(CheckContextRead(caller, found));
        }
        return conversations_->Read(*request);
      });
}

}  // namespace coordinator
