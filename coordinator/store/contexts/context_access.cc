#include "coordinator/store/contexts/context_access.h"

#include <string>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"

namespace coordinator {

using storage::ColumnFamily;

absl::Status CheckContextChange(const Access& access, const v1::TaskContext& context) {
  if (access.Owns(context.agent())) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("agent ", access.principal,
                                                  " may not change context ", context.context_id(),
                                                  " owned by \"", context.agent(), "\""));
}

absl::Status CheckConversationWrite(const Access& access, const v1::TaskContext& context) {
  if (!access.scoped) return absl::OkStatus();
  if (context.parties().empty() ? access.Owns(context.agent())
                                : absl::c_linear_search(context.parties(), access.principal)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("agent ", access.principal, " may not write the conversation of context ",
                   context.context_id(),
                   context.parties().empty()
                       ? ": only its owner writes it"
                       : absl::StrCat(": only its parties (",
                                      absl::StrJoin(context.parties(), ", "), ") write it")));
}

absl::StatusOr<v1::TaskContext> LockContextHeader(storage::Transaction& txn,
                                                  absl::string_view context_id) {
  absl::StatusOr<std::string> raw =
      txn.GetForUpdate(ColumnFamily::kContexts, keys::ContextHeader(context_id));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(absl::StrCat("context ", context_id, " not found"));
  }
  RETURN_IF_ERROR(raw.status());
  v1::TaskContext context;
  RETURN_IF_ERROR(DecodeRecord(*raw, &context));
  return context;
}

}  // namespace coordinator
