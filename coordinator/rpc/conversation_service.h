// gRPC face of ConversationStore: coordinator.v1.ConversationService.
#ifndef COORDINATOR_RPC_CONVERSATION_SERVICE_H_
#define COORDINATOR_RPC_CONVERSATION_SERVICE_H_

#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/v1/conversation.grpc.pb.h"

namespace coordinator {

class ConversationServiceImpl final : public v1::ConversationService::CallbackService {
 public:
  // `contexts` tells who may read and write a conversation (docs/security.md).
  ConversationServiceImpl(ConversationStore* conversations, ContextStore* contexts,
                          CallRunner* calls)
      : conversations_(conversations), contexts_(contexts), calls_(calls) {}

  grpc::ServerUnaryReactor* AppendMessage(grpc::CallbackServerContext* context,
                                          const v1::AppendMessageRequest* request,
                                          v1::AppendMessageResponse* response) override;
  grpc::ServerUnaryReactor* GetConversation(grpc::CallbackServerContext* context,
                                            const v1::GetConversationRequest* request,
                                            v1::GetConversationResponse* response) override;

 private:
  ConversationStore* conversations_;  // not owned
  ContextStore* contexts_;            // not owned
  CallRunner* calls_;                 // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_CONVERSATION_SERVICE_H_
