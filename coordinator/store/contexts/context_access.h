// Who may change a context and write its conversation (docs/security.md, "Ownership"): the
// owner of a context is its `agent`, its `parties` take part in it. The stores check these
// inside the transaction that makes the change, on the header that transaction read and locked,
// so the answer cannot turn between the check and the change.
#ifndef COORDINATOR_STORE_CONTEXTS_CONTEXT_ACCESS_H_
#define COORDINATOR_STORE_CONTEXTS_CONTEXT_ACCESS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/records/access.h"
#include "coordinator/v1/context.pb.h"
#include "storage/store.h"

namespace coordinator {

// Changing a context (updating or deleting it, recording its commands) is for its owner.
[[nodiscard]] absl::Status CheckContextChange(const Access& access, const v1::TaskContext& context);

// Writing a context's conversation is for its parties, or its owner when it has none, so that
// the judge cannot rewrite what the agent under test said.
[[nodiscard]] absl::Status CheckConversationWrite(const Access& access,
                                                  const v1::TaskContext& context);

// Reads and locks the header of `context_id` inside `txn`; NOT_FOUND when there is none.
[[nodiscard]] absl::StatusOr<v1::TaskContext> LockContextHeader(storage::Transaction& txn,
                                                                absl::string_view context_id);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONTEXTS_CONTEXT_ACCESS_H_
