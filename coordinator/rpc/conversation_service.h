// gRPC face of ConversationStore: coordinator.v1.ConversationService.
#ifndef COORDINATOR_RPC_CONVERSATION_SERVICE_H_
#define COORDINATOR_RPC_CONVERSATION_SERVICE_H_

#include "common/thread_pool.h"
#include "coordinator/store/context_store.h"
#include "coordinator/store/conversation_store.h"
#include "coordinator/v1/conversation.grpc.pb.h"

namespace coordinator {

class ConversationServiceImpl final : public v1::ConversationService::CallbackService {
 public:
  // `contexts` tells who may read and write a conversation (docs/security.md).
  ConversationServiceImpl(ConversationStore* conversations, ContextStore* contexts,
                          common::ThreadPool* pool)
      : conversations_(conversations), contexts_(contexts), pool_(pool) {}

  grpc::ServerUnaryReactor* AppendMessage(grpc::CallbackServerContext* context,
                                          const v1::AppendMessageRequest* request,
                                          v1::AppendMessageResponse* response) override;
  grpc::ServerUnaryReactor* GetConversation(grpc::CallbackServerContext* context,
                                            const v1::GetConversationRequest* request,
                                            v1::GetConversationResponse* response) override;

 private:
  ConversationStore* conversations_;  // not owned
  ContextStore* contexts_;            // not owned
  common::ThreadPool* pool_;          // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_CONVERSATION_SERVICE_H_
