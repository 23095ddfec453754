// Domain logic of conversations: one record per message plus a small running-totals record, so
// an append writes two small values whatever the length of the history.
#ifndef COORDINATOR_STORE_CONTEXTS_CONVERSATION_STORE_H_
#define COORDINATOR_STORE_CONTEXTS_CONVERSATION_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/v1/conversation.pb.h"
#include "coordinator/v1/stored.pb.h"
#include "storage/store.h"

namespace coordinator {

class ConversationStore {
 public:
  ConversationStore(storage::Store* store, Limits limits) : store_(store), limits_(limits) {}

  // Appends for an `access` that may write the context's conversation (CheckConversationWrite,
  // context_access.h: a scoped one needs the context), checked inside the transaction.
  [[nodiscard]] absl::StatusOr<v1::AppendMessageResponse> Append(
      const v1::AppendMessageRequest& request, const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::GetConversationResponse> Read(
      const v1::GetConversationRequest& request);

  // Called with the context_id after each committed append, on the committing thread: it must
  // be quick (the web console's feed). Set before the first call; default none.
  void set_on_change(std::function<void(const std::string&)> fn) { on_change_ = std::move(fn); }

  // ---- The conversation's life. A conversation lives under its context's prefix and goes with
  // it: ContextStore's purge of a context calls these, inside its transaction. ----

  // The meta (the conversation's parent record); nullopt when the context has no conversation.
  [[nodiscard]] static absl::StatusOr<std::optional<v1::ConversationMeta>> ReadMeta(
      storage::Store& store, absl::string_view context_id);
  // The same, read and locked inside `txn`: no message is appended until it commits.
  [[nodiscard]] static absl::StatusOr<std::optional<v1::ConversationMeta>> LockMeta(
      storage::Transaction& txn, absl::string_view context_id);
  // Deletes the messages (the children) until *deleted reaches `limit`, counting each. True when
  // none is left. The caller holds the meta's lock.
  [[nodiscard]] static absl::StatusOr<bool> PurgeMessages(storage::Transaction& txn,
                                                          absl::string_view context_id,
                                                          int64_t limit, int64_t* deleted);
  // Deletes the meta: the last record of the conversation to go.
  [[nodiscard]] static absl::Status DeleteMeta(storage::Transaction& txn,
                                               absl::string_view context_id);
  // Keys the conversation holds, meta included (what a dry run counts).
  [[nodiscard]] static absl::StatusOr<int64_t> CountRecords(storage::Store& store,
                                                            absl::string_view context_id);

 private:
  storage::Store* store_;  // not owned
  const Limits limits_;
  std::function<void(const std::string&)> on_change_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONTEXTS_CONVERSATION_STORE_H_
