// Domain logic of conversations: one record per message plus a small running-totals record, so
// an append writes two small values whatever the length of the history.
#ifndef COORDINATOR_STORE_CONVERSATION_STORE_H_
#define COORDINATOR_STORE_CONVERSATION_STORE_H_

#include "absl/status/statusor.h"
#include "coordinator/store/limits.h"
#include "coordinator/v1/conversation.pb.h"
#include "storage/store.h"

namespace coordinator {

class ConversationStore {
 public:
  ConversationStore(storage::Store* store, Limits limits) : store_(store), limits_(limits) {}

  [[nodiscard]] absl::StatusOr<v1::AppendMessageResponse> Append(
      const v1::AppendMessageRequest& request);
  [[nodiscard]] absl::StatusOr<v1::GetConversationResponse> Read(
      const v1::GetConversationRequest& request);

 private:
  storage::Store* store_;  // not owned
  const Limits limits_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONVERSATION_STORE_H_
