#include "coordinator/conversation_service.h"

#include "coordinator/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* ConversationServiceImpl::AppendMessage(
    grpc::CallbackServerContext* context, const v1::AppendMessageRequest* request,
    v1::AppendMessageResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return conversations_->Append(*request); });
}

grpc::ServerUnaryReactor* ConversationServiceImpl::GetConversation(
    grpc::CallbackServerContext* context, const v1::GetConversationRequest* request,
    v1::GetConversationResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return conversations_->Read(*request); });
}

}  // namespace coordinator
