#include "coordinator/store/contexts/context_store.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/contexts/context_access.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/contexts/scores.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "google/protobuf/util/field_mask_util.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;
using v1::TaskContext;

constexpr int kDefaultContextPageSize = 50;
constexpr int kDefaultCommandPageSize = 100;

// Fields a caller may change with UpdateContext; the others are output only.
const absl::flat_hash_set<std::string>& MutablePaths() {
  static const auto* paths = new absl::flat_hash_set<std::string>{
      "agent", "external_task_id", "workspace_dir", "shared_dir", "environment_handle", "status",
      "labels"};
  return *paths;
}

absl::Status NotFound(absl::string_view context_id) {
  return absl::NotFoundError(absl::StrCat("context ", context_id, " not found"));
}

// The header a read returned; nullopt when there is none.
absl::StatusOr<std::optional<TaskContext>> DecodeHeader(const absl::StatusOr<std::string>& raw) {
  if (absl::IsNotFound(raw.status())) return std::nullopt;
  RETURN_IF_ERROR(raw.status());
  TaskContext context;
  RETURN_IF_ERROR(DecodeRecord(*raw, &context));
  return context;
}

absl::Status PutHeader(Transaction& txn, const TaskContext& context) {
  return txn.Put(ColumnFamily::kContexts, keys::ContextHeader(context.context_id()),
                 EncodeRecord(context));
}

// The context's entry in the newest-first index: by its create time, which never changes.
std::string TimeIndexKey(const TaskContext& context) {
  return keys::ContextByTime(absl::ToUnixMicros(FromProtoTime(context.create_time())),
                             context.context_id());
}

// Marks the contexts-by-time index as built (kTimeIndexVersion) in the derived-records markers.
constexpr int64_t kTimeIndexVersion = 1;
constexpr char kTimeIndexName[] = "contexts-by-time";

// Calls `visit` with the id of every context that has a record, in id order, and, when
// `with_header`, its TaskContext (nullopt for a context with only a conversation); stops at the
// first error `visit` returns.
absl::Status WalkContexts(
    storage::Store& store, bool with_header,
    absl::FunctionRef<absl::Status(const std::string&, const std::optional<TaskContext>&)> visit) {
  const std::string all_prefix = keys::AllContextsPrefix();
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(ColumnFamily::kContexts, all_prefix, storage::PrefixUpperBound(all_prefix));
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string id, reader.ReadString());
    // The header sorts first under the context's prefix.
    std::optional<TaskContext> header;
    if (with_header && it->key() == keys::ContextHeader(id)) {
      header.emplace();
      RETURN_IF_ERROR(DecodeRecord(it->value(), &*header));
    }
    // Straight past this context's records to the next context.
    it->Seek(storage::PrefixUpperBound(keys::ContextPrefix(id)));
    RETURN_IF_ERROR(visit(id, header));
  }
  return it->status();
}

absl::Status ValidateStatus(v1::ContextStatus status) {
  if (!v1::ContextStatus_IsValid(status)) {
    return absl::InvalidArgumentError(absl::StrCat("status ", status, " is not a known value"));
  }
  return absl::OkStatus();
}

// Adds what a context counts in for to `out` (records/tallies.h), `sign` +1 (it does now) or -1
// (it no longer does).
void AddTallies(const TaskContext& context, int sign, std::vector<TallyDelta>* out) {
  out->push_back(
      TallyDelta{ContextStore::IsTerminal(context) ? Tally::kContextsEnded : Tally::kContextsActive,
                 "", sign, 0});
  const std::optional<double> score = EvaluationScore(context);
  if (!score.has_value()) return;
  const std::string task = ScoreTask(context);
  const std::string agent = ScoreAgent(context);
  out->push_back(TallyDelta{Tally::kScoreByTask, task, sign, sign * *score});
  out->push_back(TallyDelta{Tally::kScoreByAgent, agent, sign, sign * *score});
  out->push_back(
      TallyDelta{Tally::kScoreByTaskAndAgent, TaskAndAgentGroup(task, agent), sign, sign * *score});
}

// Moves the running totals from what `before` counted in for to what `after` does, inside `txn`,
// which holds the context header's lock. Null: the context did not exist before, or does not
// after. Writes nothing when both count in the same way (most changes: a command recorded, a
// label other than score or purple_agent set).
absl::Status TxnTallyContext(Transaction& txn, const TaskContext* before,
                             const TaskContext* after) {
  if (before != nullptr && after != nullptr &&
      ContextStore::IsTerminal(*before) == ContextStore::IsTerminal(*after) &&
      before->external_task_id() == after->external_task_id()) {
    // The common case (a command recorded, a phase label set): only the score's two labels can
    // still change what the context counts in for, and they are compared before any parsing.
    auto label = [](const TaskContext& c, const std::string& name) -> const std::string* {
      auto it = c.labels().find(name);
      return it == c.labels().end() ? nullptr : &it->second;
    };
    auto same = [&](const std::string& name) {
      const std::string* a = label(*before, name);
      const std::string* b = label(*after, name);
      return a == b || (a != nullptr && b != nullptr && *a == *b);
    };
    if (same("score") && same("purple_agent")) return absl::OkStatus();
  }
  std::vector<TallyDelta> deltas;
  if (before != nullptr) AddTallies(*before, -1, &deltas);
  if (after != nullptr) AddTallies(*after, +1, &deltas);
  const TaskContext& either = after != nullptr ? *after : *before;
  return Tallies::TxnApply(txn, std::move(deltas), either.context_id());
}

}  // namespace

absl::Status ContextStore::ValidateMutableFields(const TaskContext& context) const {
  RETURN_IF_ERROR(common::ValidateOptionalId("agent", context.agent()));
  RETURN_IF_ERROR(common::ValidateOptionalId("external_task_id", context.external_task_id()));
  RETURN_IF_ERROR(common::ValidateSize("workspace_dir", context.workspace_dir(),
                                       limits_.max_field_bytes, "max_field_bytes"));
  RETURN_IF_ERROR(common::ValidateSize("shared_dir", context.shared_dir(), limits_.max_field_bytes,
                                       "max_field_bytes"));
  RETURN_IF_ERROR(common::ValidateSize("environment_handle", context.environment_handle(),
                                       limits_.max_field_bytes, "max_field_bytes"));
  RETURN_IF_ERROR(ValidateStatus(context.status()));
  if (static_cast<size_t>(context.labels_size()) > limits_.max_labels) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("context has %d labels; the limit is %d (--max_labels)",
                        context.labels_size(), limits_.max_labels));
  }
  for (const auto& [key, value] : context.labels()) {
    RETURN_IF_ERROR(common::ValidateId("label key", key));
    RETURN_IF_ERROR(common::ValidateSize(absl::StrCat("label ", key), value,
                                         limits_.max_label_value_bytes, "max_label_value_bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskContext> ContextStore::Create(const TaskContext& request) {
  RETURN_IF_ERROR(common::ValidateId("context_id", request.context_id()));
  RETURN_IF_ERROR(ValidateMutableFields(request));

  TaskContext context = request;
  if (context.status() == v1::CONTEXT_STATUS_UNSPECIFIED) {
    context.set_status(v1::CONTEXT_STATUS_ACTIVE);
  }
  context.set_command_count(0);
  context.set_failed_commands(0);
  const auto now = ToProtoTime(absl::Now());
  *context.mutable_create_time() = now;
  *context.mutable_update_time() = now;
  context.set_version(1);

  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    absl::StatusOr<std::string> existing =
        txn.GetForUpdate(ColumnFamily::kContexts, keys::ContextHeader(context.context_id()));
    if (existing.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("context ", context.context_id(), " already exists"));
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    RETURN_IF_ERROR(PutHeader(txn, context));
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kIndex, TimeIndexKey(context), ""));
    RETURN_IF_ERROR(TxnTallyContext(txn, nullptr, &context));
    if (!context.agent().empty()) {
      RETURN_IF_ERROR(txn.Put(ColumnFamily::kIndex,
                              keys::AgentIndex(context.agent(), context.context_id()), ""));
    }
    return absl::OkStatus();
  }));
  Changed(context.context_id());
  return context;
}

absl::StatusOr<TaskContext> ContextStore::Get(absl::string_view context_id) {
  RETURN_IF_ERROR(common::ValidateId("context_id", context_id));
  absl::StatusOr<std::string> raw =
      store_->Get(ColumnFamily::kContexts, keys::ContextHeader(context_id));
  if (absl::IsNotFound(raw.status())) return NotFound(context_id);
  RETURN_IF_ERROR(raw.status());
  TaskContext context;
  RETURN_IF_ERROR(DecodeRecord(*raw, &context));
  return context;
}

absl::StatusOr<TaskContext> ContextStore::Update(const v1::UpdateContextRequest& request,
                                                 const Access& access) {
  const TaskContext& patch = request.context();
  RETURN_IF_ERROR(common::ValidateId("context_id", patch.context_id()));
  if (patch.version() <= 0) {
    return absl::InvalidArgumentError(
        "version is required: pass the version of the context you read");
  }
  google::protobuf::FieldMask mask = request.update_mask();
  if (mask.paths().empty()) {
    for (const std::string& path : MutablePaths()) mask.add_paths(path);
  }
  for (const std::string& path : mask.paths()) {
    if (!MutablePaths().contains(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("update_mask path \"", path, "\" is not a field that can be changed"));
    }
  }
  RETURN_IF_ERROR(ValidateMutableFields(patch));

  TaskContext updated;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(TaskContext current, LockContextHeader(txn, patch.context_id()));
    RETURN_IF_ERROR(CheckContextChange(access, current));
    if (current.version() != patch.version()) {
      return absl::AbortedError(
          absl::StrFormat("context %s is at version %d, not %d: read it again and retry",
                          patch.context_id(), current.version(), patch.version()));
    }
    updated = current;
    google::protobuf::util::FieldMaskUtil::MergeOptions options;
    options.set_replace_repeated_fields(true);
    google::protobuf::util::FieldMaskUtil::MergeMessageTo(patch, mask, options, &updated);
    if (updated.status() == v1::CONTEXT_STATUS_UNSPECIFIED) updated.set_status(current.status());
    updated.set_version(current.version() + 1);
    *updated.mutable_update_time() = ToProtoTime(absl::Now());
    RETURN_IF_ERROR(PutHeader(txn, updated));
    RETURN_IF_ERROR(TxnTallyContext(txn, &current, &updated));
    if (updated.agent() != current.agent()) {
      if (!current.agent().empty()) {
        RETURN_IF_ERROR(txn.Delete(ColumnFamily::kIndex,
                                   keys::AgentIndex(current.agent(), current.context_id())));
      }
      if (!updated.agent().empty()) {
        RETURN_IF_ERROR(txn.Put(ColumnFamily::kIndex,
                                keys::AgentIndex(updated.agent(), updated.context_id()), ""));
      }
    }
    return absl::OkStatus();
  }));
  Changed(updated.context_id());
  return updated;
}

absl::Status ContextStore::Delete(absl::string_view context_id, int64_t expected_version,
                                  const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("context_id", context_id));
  if (expected_version < 0) return absl::InvalidArgumentError("version must not be negative");
  absl::Status deleted = store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    auto version_matches = [&](const Life& life) -> absl::StatusOr<bool> {
      if (life.header.has_value()) RETURN_IF_ERROR(CheckContextChange(access, *life.header));
      if (life.header.has_value() && expected_version != 0 &&
          life.header->version() != expected_version) {
        return absl::AbortedError(
            absl::StrFormat("context %s is at version %d, not %d: read it again and retry",
                            context_id, life.header->version(), expected_version));
      }
      return true;
    };
    ASSIGN_OR_RETURN(PurgeProgress progress,
                     PurgeStep(txn, context_id, kNoPurgeLimit, version_matches));
    if (progress.absent) return NotFound(context_id);
    return absl::OkStatus();
  });
  if (deleted.ok()) Changed(context_id);
  return deleted;
}

absl::StatusOr<v1::ListContextsResponse> ContextStore::List(
    const v1::ListContextsRequest& request) {
  RETURN_IF_ERROR(common::ValidateOptionalId("agent", request.agent()));
  RETURN_IF_ERROR(ValidateStatus(request.status()));
  ASSIGN_OR_RETURN(
      const int page_size,
      ResolvePageSize(request.page_size(), kDefaultContextPageSize, limits_.max_page_size));
  const std::string filter = absl::StrCat(request.agent().size(), ":", request.agent(), ":",
                                          static_cast<int>(request.status()));
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "contexts", filter));

  v1::ListContextsResponse response;
  auto matches = [&](const TaskContext& c) {
    return request.status() == v1::CONTEXT_STATUS_UNSPECIFIED || c.status() == request.status();
  };
  // `resume` is the context_id to start at (inclusive).
  size_t page_bytes = 0;
  // Adds `context` unless the page is full (by count or by bytes); false when it is.
  auto add = [&](TaskContext context) {
    const size_t size = context.ByteSizeLong();
    if (response.contexts_size() == page_size ||
        (response.contexts_size() > 0 && page_bytes + size > kMaxPageBytes)) {
      response.set_next_page_token(EncodePageToken("contexts", filter, context.context_id()));
      return false;
    }
    page_bytes += size;
    *response.add_contexts() = std::move(context);
    return true;
  };
  if (!request.agent().empty()) {
    const std::string prefix = keys::AgentIndexPrefix(request.agent());
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
    if (!resume.empty()) it->Seek(keys::AgentIndex(request.agent(), resume));
    for (; it->Valid(); it->Next()) {
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      RETURN_IF_ERROR(reader.ReadString().status());
      ASSIGN_OR_RETURN(std::string context_id, reader.ReadString());
      if (response.contexts_size() == page_size) {
        response.set_next_page_token(EncodePageToken("contexts", filter, context_id));
        break;
      }
      absl::StatusOr<TaskContext> context = Get(context_id);
      if (absl::IsNotFound(context.status())) continue;  // deleted since the index was read
      RETURN_IF_ERROR(context.status());
      if (matches(*context) && !add(*std::move(context))) break;
    }
    RETURN_IF_ERROR(it->status());
    return response;
  }

  const std::string all_prefix = keys::AllContextsPrefix();
  std::unique_ptr<storage::Iterator> it = store_->NewIterator(
      ColumnFamily::kContexts, all_prefix, storage::PrefixUpperBound(all_prefix));
  if (!resume.empty()) it->Seek(keys::ContextPrefix(resume));
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string context_id, reader.ReadString());
    ASSIGN_OR_RETURN(uint8_t kind, reader.ReadByte());
    if (kind == keys::kContextHeader) {
      if (response.contexts_size() == page_size) {
        response.set_next_page_token(EncodePageToken("contexts", filter, context_id));
        break;
      }
      TaskContext context;
      RETURN_IF_ERROR(DecodeRecord(it->value(), &context));
      if (matches(context) && !add(std::move(context))) break;
    }
    // Skip the rest of this context's records (commands, conversation) in one seek.
    it->Seek(storage::PrefixUpperBound(keys::ContextPrefix(context_id)));
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<v1::RecordCommandResponse> ContextStore::RecordCommand(
    const v1::RecordCommandRequest& request, const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("context_id", request.context_id()));
  if (request.command().empty()) return absl::InvalidArgumentError("command is required");
  RETURN_IF_ERROR(common::ValidateSize("command", request.command(), limits_.max_command_bytes,
                                       "max_command_bytes"));
  RETURN_IF_ERROR(common::ValidateSize("output_digest", request.output_digest(),
                                       limits_.max_field_bytes, "max_field_bytes"));
  if (request.duration().seconds() < 0 || request.duration().nanos() < 0 ||
      request.duration().nanos() >= 1000000000) {
    return absl::InvalidArgumentError("duration must be a non-negative, normalized duration");
  }
  RETURN_IF_ERROR(common::ValidateOptionalId("request_id", request.request_id()));

  v1::RecordCommandResponse response;
  bool replayed = false;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    replayed = false;
    ASSIGN_OR_RETURN(TaskContext context, LockContextHeader(txn, request.context_id()));
    RETURN_IF_ERROR(CheckContextChange(access, context));
    // A retry of a command already recorded (the header lock orders it after the original).
    const std::string request_key =
        request.request_id().empty()
            ? ""
            : keys::CommandRequest(request.context_id(), request.request_id());
    if (!request_key.empty()) {
      ASSIGN_OR_RETURN(std::optional<int64_t> seen, ReadRequestSeq(txn, request_key));
      if (seen.has_value()) {
        ASSIGN_OR_RETURN(const std::string raw,
                         txn.GetForUpdate(ColumnFamily::kContexts,
                                          keys::CommandRecord(request.context_id(), *seen)));
        v1::CommandRecord record;
        RETURN_IF_ERROR(DecodeRecord(raw, &record));
        if (record.command() != request.command() || record.exit_code() != request.exit_code()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "request_id ", request.request_id(), " already recorded command ", record.seq(),
              " of context ", request.context_id(), ", which is another command"));
        }
        *response.mutable_context() = std::move(context);
        *response.mutable_record() = std::move(record);
        replayed = true;
        return absl::OkStatus();
      }
    }
    const auto now = ToProtoTime(absl::Now());
    v1::CommandRecord record;
    record.set_seq(context.command_count() + 1);
    record.set_command(request.command());
    record.set_exit_code(request.exit_code());
    *record.mutable_duration() = request.duration();
    record.set_output_digest(request.output_digest());
    *record.mutable_time() = now;
    context.set_command_count(record.seq());
    if (request.exit_code() != 0) context.set_failed_commands(context.failed_commands() + 1);
    context.set_version(context.version() + 1);
    *context.mutable_update_time() = now;
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kContexts,
                            keys::CommandRecord(request.context_id(), record.seq()),
                            EncodeRecord(record)));
    if (!request_key.empty()) {
      RETURN_IF_ERROR(
          txn.Put(ColumnFamily::kContexts, request_key, EncodeRequestSeq(record.seq())));
    }
    RETURN_IF_ERROR(PutHeader(txn, context));
    *response.mutable_context() = std::move(context);
    *response.mutable_record() = std::move(record);
    return absl::OkStatus();
  }));
  if (!replayed) Changed(request.context_id());
  return response;
}

absl::StatusOr<v1::ListCommandsResponse> ContextStore::ListCommands(
    const v1::ListCommandsRequest& request) {
  ASSIGN_OR_RETURN(TaskContext context, Get(request.context_id()));
  ASSIGN_OR_RETURN(
      const int page_size,
      ResolvePageSize(request.page_size(), kDefaultCommandPageSize, limits_.max_page_size));
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "commands", request.context_id()));
  const std::string prefix = keys::CommandPrefix(request.context_id());
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(absl::StrCat(prefix, resume));
  v1::ListCommandsResponse response;
  size_t page_bytes = 0;
  for (; it->Valid(); it->Next()) {
    v1::CommandRecord record;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &record));
    const size_t size = record.ByteSizeLong();
    if (response.commands_size() == page_size ||
        (response.commands_size() > 0 && page_bytes + size > kMaxPageBytes)) {
      response.set_next_page_token(
          EncodePageToken("commands", request.context_id(), it->key().substr(prefix.size())));
      break;
    }
    page_bytes += size;
    *response.add_commands() = std::move(record);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<std::vector<v1::CommandRecord>> ContextStore::LastCommands(
    absl::string_view context_id, int n) {
  ASSIGN_OR_RETURN(const TaskContext context, Get(context_id));
  std::vector<v1::CommandRecord> out;
  if (n <= 0 || context.command_count() == 0) return out;
  const int64_t first = std::max<int64_t>(1, context.command_count() - n + 1);
  const std::string prefix = keys::CommandPrefix(context_id);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
  it->Seek(keys::CommandRecord(context_id, static_cast<uint64_t>(first)));
  for (; it->Valid(); it->Next()) {
    v1::CommandRecord record;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &record));
    if (record.seq() > context.command_count()) break;  // recorded after the header was read
    out.push_back(std::move(record));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

bool ContextStore::IsTerminal(const TaskContext& context) {
  return context.status() == v1::CONTEXT_STATUS_COMPLETED ||
         context.status() == v1::CONTEXT_STATUS_FAILED ||
         context.status() == v1::CONTEXT_STATUS_CANCELED;
}

bool ContextStore::IsTerminal(const Life& life) {
  if (life.header.has_value()) return IsTerminal(*life.header);
  return life.conversation.has_value();
}

TallySource ContextStore::Totals() {
  return [](storage::Store& store, const TallySink& add) -> absl::Status {
    return ForEachContextHeader(store, [&](const TaskContext& context) -> absl::Status {
      std::vector<TallyDelta> deltas;
      AddTallies(context, +1, &deltas);
      for (const TallyDelta& d : deltas) add(d);
      return absl::OkStatus();
    });
  };
}

absl::Time ContextStore::LastChange(const Life& life) {
  if (life.header.has_value()) return FromProtoTime(life.header->update_time());
  if (life.conversation.has_value()) return FromProtoTime(life.conversation->update_time());
  return absl::InfinitePast();
}

absl::StatusOr<ContextStore::Life> ContextStore::ReadLife(storage::Store& store,
                                                          absl::string_view context_id) {
  Life life;
  ASSIGN_OR_RETURN(life.header, DecodeHeader(store.Get(ColumnFamily::kContexts,
                                                       keys::ContextHeader(context_id))));
  ASSIGN_OR_RETURN(life.conversation, ConversationStore::ReadMeta(store, context_id));
  return life;
}

absl::Status ContextStore::ForEachContextId(
    storage::Store& store, absl::FunctionRef<absl::Status(const std::string&)> visit) {
  return WalkContexts(
      store, /*with_header=*/false,
      [&](const std::string& id, const std::optional<TaskContext>&) { return visit(id); });
}

absl::StatusOr<bool> ContextStore::EnsureTimeIndex(storage::Store& store) {
  absl::StatusOr<std::string> raw =
      store.Get(ColumnFamily::kIndex, keys::DerivedBuilt(kTimeIndexName));
  if (raw.ok()) {
    google::protobuf::Int64Value version;
    RETURN_IF_ERROR(DecodeRecord(*raw, &version));
    if (version.value() >= kTimeIndexVersion) return false;
  } else if (!absl::IsNotFound(raw.status())) {
    return raw.status();
  }
  // One entry per context, written in batches, then the marker. An entry written twice is the
  // same entry, so replicas of an etcd data set starting together may both write them; each
  // batch writes the entries of contexts that still exist (their headers read in the same
  // transaction), so a context deleted meanwhile leaves no entry behind.
  std::vector<std::pair<std::string, std::string>> batch;  // context id, entry
  auto flush = [&]() -> absl::Status {
    RETURN_IF_ERROR(store.RunTransaction([&](Transaction& txn) -> absl::Status {
      for (const auto& [id, key] : batch) {
        absl::StatusOr<std::string> header =
            txn.GetForUpdate(ColumnFamily::kContexts, keys::ContextHeader(id));
        if (absl::IsNotFound(header.status())) continue;
        RETURN_IF_ERROR(header.status());
        RETURN_IF_ERROR(txn.Put(ColumnFamily::kIndex, key, ""));
      }
      return absl::OkStatus();
    }));
    batch.clear();
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(ForEachContextHeader(store, [&](const TaskContext& context) -> absl::Status {
    batch.emplace_back(context.context_id(), TimeIndexKey(context));
    return batch.size() >= 1000 ? flush() : absl::OkStatus();
  }));
  RETURN_IF_ERROR(flush());
  RETURN_IF_ERROR(store.RunTransaction([&](Transaction& txn) -> absl::Status {
    google::protobuf::Int64Value version;
    version.set_value(kTimeIndexVersion);
    return txn.Put(ColumnFamily::kIndex, keys::DerivedBuilt(kTimeIndexName), EncodeRecord(version));
  }));
  return true;
}

absl::StatusOr<ContextStore::NewestPage> ContextStore::ListNewest(
    int limit, int max_scan, absl::string_view page_token,
    absl::FunctionRef<bool(const TaskContext&)> keep) {
  ASSIGN_OR_RETURN(const std::string resume, DecodePageToken(page_token, "contexts-by-time", ""));
  const std::string prefix = keys::ContextsByTimePrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(resume);
  NewestPage page;
  int scanned = 0;
  for (; it->Valid(); it->Next()) {
    if (static_cast<int>(page.contexts.size()) >= limit || scanned >= max_scan) {
      // More to read: the next page starts at this entry.
      page.next_page_token = EncodePageToken("contexts-by-time", "", it->key());
      break;
    }
    ++scanned;
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    RETURN_IF_ERROR(reader.ReadUint64().status());
    ASSIGN_OR_RETURN(const std::string id, reader.ReadString());
    absl::StatusOr<std::string> raw = store_->Get(ColumnFamily::kContexts, keys::ContextHeader(id));
    if (absl::IsNotFound(raw.status())) continue;  // deleted since the entry was read
    RETURN_IF_ERROR(raw.status());
    TaskContext context;
    RETURN_IF_ERROR(DecodeRecord(*raw, &context));
    if (keep(context)) page.contexts.push_back(std::move(context));
  }
  RETURN_IF_ERROR(it->status());
  return page;
}

absl::Status ContextStore::ForEachContextHeader(
    storage::Store& store, absl::FunctionRef<absl::Status(const TaskContext&)> visit) {
  return WalkContexts(store, /*with_header=*/true,
                      [&](const std::string&, const std::optional<TaskContext>& header) {
                        return header.has_value() ? visit(*header) : absl::OkStatus();
                      });
}

absl::StatusOr<PurgeProgress> ContextStore::PurgeStep(Transaction& txn,
                                                      absl::string_view context_id, int64_t limit,
                                                      Eligible eligible) {
  PurgeProgress progress;
  Life life;
  ASSIGN_OR_RETURN(life.header, DecodeHeader(txn.GetForUpdate(ColumnFamily::kContexts,
                                                              keys::ContextHeader(context_id))));
  ASSIGN_OR_RETURN(life.conversation, ConversationStore::LockMeta(txn, context_id));
  if (!life.header.has_value() && !life.conversation.has_value()) {
    progress.absent = true;
    progress.finished = true;
    return progress;
  }
  ASSIGN_OR_RETURN(const bool go, eligible(life));
  if (!go) {
    progress.kept = true;
    return progress;
  }
  // Children first, in key order: commands (0x01), then the conversation's messages (0x03).
  ASSIGN_OR_RETURN(
      bool done, DeletePrefix(txn, ColumnFamily::kContexts, keys::CommandPrefix(context_id), limit,
                              &progress.deleted));
  if (done) {
    ASSIGN_OR_RETURN(done,
                     ConversationStore::PurgeMessages(txn, context_id, limit, &progress.deleted));
  }
  if (done) {
    ASSIGN_OR_RETURN(
        done, DeletePrefix(txn, ColumnFamily::kContexts, keys::CommandRequestPrefix(context_id),
                           limit, &progress.deleted));
  }
  if (!done) return progress;
  // The parents and the index entries go together, when they fit in the budget.
  const bool indexed = life.header.has_value() && !life.header->agent().empty();
  const int64_t parents = (life.header.has_value() ? 2 : 0) +  // the header, its time entry
                          (life.conversation.has_value() ? 1 : 0) + (indexed ? 1 : 0);
  if (progress.deleted + parents > limit) return progress;
  if (indexed) {
    RETURN_IF_ERROR(
        txn.Delete(ColumnFamily::kIndex, keys::AgentIndex(life.header->agent(), context_id)));
  }
  if (life.header.has_value()) {
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kContexts, keys::ContextHeader(context_id)));
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kIndex, TimeIndexKey(*life.header)));
    RETURN_IF_ERROR(TxnTallyContext(txn, &*life.header, nullptr));
  }
  if (life.conversation.has_value()) {
    RETURN_IF_ERROR(ConversationStore::DeleteMeta(txn, context_id));
  }
  progress.deleted += parents;
  progress.finished = true;
  return progress;
}

absl::StatusOr<int64_t> ContextStore::CountPurge(storage::Store& store,
                                                 absl::string_view context_id) {
  ASSIGN_OR_RETURN(const Life life, ReadLife(store, context_id));
  ASSIGN_OR_RETURN(const int64_t commands,
                   CountPrefix(store, ColumnFamily::kContexts, keys::CommandPrefix(context_id)));
  ASSIGN_OR_RETURN(const int64_t requests, CountPrefix(store, ColumnFamily::kContexts,
                                                       keys::CommandRequestPrefix(context_id)));
  ASSIGN_OR_RETURN(const int64_t conversation, ConversationStore::CountRecords(store, context_id));
  const bool indexed = life.header.has_value() && !life.header->agent().empty();
  return commands + requests + conversation + (life.header.has_value() ? 2 : 0) + (indexed ? 1 : 0);
}

}  // namespace coordinator
