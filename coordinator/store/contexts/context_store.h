// Domain logic of TaskContexts and their command records, on the storage interface. Validates
// its input (every entry point shares these checks) and knows nothing of gRPC. It also owns a
// context's life: what ends a context, and the one cascade that deletes a context with
// everything under it (DeleteContext and retention both use it).
#ifndef COORDINATOR_STORE_CONTEXTS_CONTEXT_STORE_H_
#define COORDINATOR_STORE_CONTEXTS_CONTEXT_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/stored.pb.h"
#include "storage/store.h"

namespace coordinator {

class ContextStore {
 public:
  ContextStore(storage::Store* store, Limits limits) : store_(store), limits_(limits) {}

  [[nodiscard]] absl::StatusOr<v1::TaskContext> Create(const v1::TaskContext& context);
  [[nodiscard]] absl::StatusOr<v1::TaskContext> Get(absl::string_view context_id);
  // Update, Delete and RecordCommand change a context only for an `access` that may
  // (CheckContextChange, context_access.h), checked inside the transaction that changes it.
  [[nodiscard]] absl::StatusOr<v1::TaskContext> Update(const v1::UpdateContextRequest& request,
                                                       const Access& access = {});
  // Removes the context, its command records and its conversation in one atomic write (one
  // PurgeStep without a budget). `expected_version` 0 skips the version check.
  [[nodiscard]] absl::Status Delete(absl::string_view context_id, int64_t expected_version,
                                    const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::ListContextsResponse> List(
      const v1::ListContextsRequest& request);
  [[nodiscard]] absl::StatusOr<v1::RecordCommandResponse> RecordCommand(
      const v1::RecordCommandRequest& request, const Access& access = {});

  [[nodiscard]] absl::StatusOr<v1::ListCommandsResponse> ListCommands(
      const v1::ListCommandsRequest& request);
  // The last `n` commands recorded, oldest first (a running evaluation's timeline shows its
  // newest commands however many there were).
  [[nodiscard]] absl::StatusOr<std::vector<v1::CommandRecord>> LastCommands(
      absl::string_view context_id, int n);

  // Called with the context_id after each committed change (create, update, delete, recorded
  // command), on the committing thread: it must be quick (the web console's feed). Set before
  // the first call; default none.
  void set_on_change(std::function<void(const std::string&)> fn) { on_change_ = std::move(fn); }

  // ---- A context's life. ----

  // The records that decide a context's life, each nullopt when absent.
  struct Life {
    std::optional<v1::TaskContext> header;
    std::optional<v1::ConversationMeta> conversation;
  };
  // Whether the context may go now, asked under the parents' locks; an error aborts the purge
  // with it.
  using Eligible = absl::FunctionRef<absl::StatusOr<bool>(const Life&)>;

  // COMPLETED, FAILED and CANCELED.
  static bool IsTerminal(const v1::TaskContext& context);
  // A context with a header has ended when its status is terminal. A conversation without a
  // TaskContext (the purple side alone) has no status: it ends when it stops changing, so it
  // counts as terminal and LastChange decides. A context with neither has not ended.
  static bool IsTerminal(const Life& life);
  // The header's update_time, else the conversation's (InfinitePast with neither).
  static absl::Time LastChange(const Life& life);

  [[nodiscard]] static absl::StatusOr<Life> ReadLife(storage::Store& store,
                                                     absl::string_view context_id);
  // Calls `visit` with the id of every context that has a record (a header, or only a
  // conversation), in id order; stops at the first error `visit` returns.
  [[nodiscard]] static absl::Status ForEachContextId(
      storage::Store& store, absl::FunctionRef<absl::Status(const std::string&)> visit);
  // Contexts newest first (by create time), from the contexts-by-time index: those `keep`
  // accepts, at most `limit` of them, reading at most `max_scan` index entries, so a filter
  // that rarely matches still answers quickly (with fewer contexts and a next_page_token).
  // `page_token` is a previous page's next_page_token ("" from the newest).
  struct NewestPage {
    std::vector<v1::TaskContext> contexts;
    std::string next_page_token;  // "" when there is nothing older
  };
  [[nodiscard]] absl::StatusOr<NewestPage> ListNewest(
      int limit, int max_scan, absl::string_view page_token,
      absl::FunctionRef<bool(const v1::TaskContext&)> keep);
  // Builds the contexts-by-time index of a database written before it existed, once (its marker
  // says so afterwards); whether it built it. Reads every header: call it before the store
  // serves.
  [[nodiscard]] static absl::StatusOr<bool> EnsureTimeIndex(storage::Store& store);

  // Calls `visit` with every TaskContext, in id order; stops at the first error `visit` returns.
  // What the contexts count in for in the running totals (records/tallies.h): the active and
  // ended counts and the scores by task and agent (scores.h).
  static TallySource Totals();
  [[nodiscard]] static absl::Status ForEachContextHeader(
      storage::Store& store, absl::FunctionRef<absl::Status(const v1::TaskContext&)> visit);
  // One step of deleting the context with everything under it, inside `txn`, at most `limit`
  // keys (kNoPurgeLimit: all of it). Locks the header and the conversation meta, so no command or
  // message is added meanwhile, and asks `eligible`. Deletes the command records, then the
  // conversation's messages (ConversationStore's), and last, together and only when they fit,
  // the header, its agent-index entry and the conversation meta.
  [[nodiscard]] static absl::StatusOr<PurgeProgress> PurgeStep(storage::Transaction& txn,
                                                               absl::string_view context_id,
                                                               int64_t limit, Eligible eligible);
  // Keys a purge of the context deletes (what a dry run counts).
  [[nodiscard]] static absl::StatusOr<int64_t> CountPurge(storage::Store& store,
                                                          absl::string_view context_id);

 private:
  [[nodiscard]] absl::Status ValidateMutableFields(const v1::TaskContext& context) const;

  void Changed(absl::string_view context_id) const {
    if (on_change_) on_change_(std::string(context_id));
  }

  storage::Store* store_;  // not owned
  const Limits limits_;
  std::function<void(const std::string&)> on_change_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONTEXTS_CONTEXT_STORE_H_
