#include "coordinator/store/retry/task_state_store.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/proto_json.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/retry/task_state_records.h"
#include "google/protobuf/struct.pb.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;
using task_state_records::DecodeAs;
using task_state_records::Field;
using task_state_records::kMaxUnixSeconds;
using task_state_records::ParseField;
using task_state_records::Sha256Hex;
using task_state_records::ValidateTimestamp;
using v1::StoredTaskHeader;

constexpr int kDefaultPageSize = 100;
constexpr size_t kMaxFieldNameBytes = 64;
constexpr size_t kMaxLadderTiers = 64;

absl::Status TaskNotFound(absl::string_view task_id) {
  return absl::NotFoundError(absl::StrCat("task ", task_id, " not found"));
}

std::string UnixSeconds(const google::protobuf::Timestamp& ts) {
  return absl::StrCat(ts.seconds());
}

google::protobuf::Timestamp Now() { return ToProtoTime(absl::Now()); }

// Reads history records `first`..`last` (by seq) of one kind from a Store or a Transaction.
template <typename Source, typename Record>
absl::Status ReadHistory(Source& source, absl::string_view task_id, uint8_t kind, int64_t first,
                         int64_t last, google::protobuf::RepeatedPtrField<Record>* out) {
  if (last < first || last <= 0) return absl::OkStatus();
  const std::string prefix = keys::TaskHistoryPrefix(task_id, kind);
  std::unique_ptr<storage::Iterator> it =
      source.NewIterator(ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  it->Seek(
      keys::TaskHistoryRecord(task_id, kind, static_cast<uint64_t>(std::max<int64_t>(1, first))));
  for (; it->Valid(); it->Next()) {
    Record record;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &record));
    if (record.seq() > last) break;  // appended after the header was read
    *out->Add() = std::move(record);
  }
  return it->status();
}

absl::StatusOr<int64_t> ParseInt(absl::string_view field, absl::string_view value, int64_t min,
                                 int64_t max) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s takes a whole number from %d to %d, not \"%s\"", field, min, max,
                        absl::CHexEscape(value.substr(0, 64))));
  }
  return v;
}

}  // namespace

namespace task_state_records {

Field ParseField(absl::string_view name) {
  static constexpr std::pair<const char*, Field> kFields[] = {
      {"task_id", Field::kTaskId},
      {"task_desc", Field::kTaskDesc},
      {"attempt_count", Field::kAttemptCount},
      {"model_tier", Field::kModelTier},
      {"model", Field::kModel},
      {"created_at", Field::kCreatedAt},
      {"blocked", Field::kBlocked},
      {"blocked_at", Field::kBlockedAt},
      {"block_reason", Field::kBlockReason},
      {"failures", Field::kFailures},
      {"escalation_log", Field::kEscalationLog},
      {"quality_gate_results", Field::kQualityGateResults},
  };
  for (const auto& [known, field] : kFields) {
    if (name == known) return field;
  }
  return Field::kCustom;
}

absl::Status ValidateTimestamp(absl::string_view field, const google::protobuf::Timestamp& ts) {
  if (ts.seconds() < 0 || ts.seconds() > kMaxUnixSeconds || ts.nanos() < 0 ||
      ts.nanos() >= 1000000000) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be a time between 1970 and 9999"));
  }
  return absl::OkStatus();
}

}  // namespace task_state_records

std::vector<std::string> DefaultTierLadder() {
  return {"codex-mini",   "gpt-5.1",     "codex",        "codex-max",
          "claude-haiku", "claude-opus", "aria-thinking"};
}

absl::Status ValidateTierLadder(const std::vector<std::string>& ladder) {
  if (ladder.empty()) return absl::InvalidArgumentError("the tier ladder has no tiers");
  if (ladder.size() > kMaxLadderTiers) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the tier ladder has %d tiers; the limit is %d", ladder.size(), kMaxLadderTiers));
  }
  absl::flat_hash_set<std::string> seen;
  for (const std::string& name : ladder) {
    RETURN_IF_ERROR(common::ValidateId("tier model name", name));
    if (name.find(',') != std::string::npos) {
      return absl::InvalidArgumentError("a tier model name cannot contain ','");
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("the tier ladder names ", name, " twice"));
    }
  }
  return absl::OkStatus();
}

std::string TaskIdForDescription(absl::string_view description) {
  return Sha256Hex(description).substr(0, 8);
}

std::string FormatFailureContext(const std::vector<v1::TaskFailure>& failures) {
  if (failures.empty()) return "";
  std::string text = "Previous failures:\n";
  for (const v1::TaskFailure& f : failures) {
    const std::string line =
        absl::StrCat("Attempt ", f.attempt(), " (model: ", f.model(), "): ", f.error());
    for (absl::string_view part : absl::StrSplit(line, '\n')) {
      absl::StrAppend(&text, "  ", part, "\n");
    }
  }
  return text;
}

absl::Status ValidateFieldName(absl::string_view field) {
  if (field.empty()) return absl::InvalidArgumentError("field is required");
  if (field.size() > kMaxFieldNameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("field name is %d bytes; the limit is %d",
                                                      field.size(), kMaxFieldNameBytes));
  }
  const bool good_start = absl::ascii_isalpha(field[0]) || field[0] == '_';
  const bool good_rest = std::all_of(field.begin(), field.end(),
                                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
  if (!good_start || !good_rest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field name \"", absl::CHexEscape(field),
        "\" is not a field name: use letters, digits and '_', not starting with a digit"));
  }
  return absl::OkStatus();
}

int32_t TaskStateStore::EffectiveTier(const StoredTaskHeader& header) const {
  return std::clamp(header.model_tier(), 1, ladder_size());
}

const std::string& TaskStateStore::ModelName(int32_t tier) const {
  return options_.tier_ladder[static_cast<size_t>(std::clamp(tier, 1, ladder_size()) - 1)];
}

// ---- Transaction building blocks ----

absl::Status TaskStateStore::CheckChange(const Access& access, absl::string_view task_id,
                                         absl::string_view owner) {
  if (access.Owns(owner)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      access.principal, " may not change task ", task_id,
      ": it does not own it (a retry task belongs to the principal that initialized it)"));
}

absl::StatusOr<StoredTaskHeader> TaskStateStore::TxnLockHeader(Transaction& txn,
                                                               absl::string_view task_id,
                                                               const Access& access) {
  absl::StatusOr<std::string> raw =
      txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  ASSIGN_OR_RETURN(StoredTaskHeader header, DecodeAs<StoredTaskHeader>(*raw));
  RETURN_IF_ERROR(CheckChange(access, task_id, header.owner()));
  return header;
}

absl::Status TaskStateStore::TxnPutHeader(Transaction& txn, StoredTaskHeader& header) {
  *header.mutable_update_time() = Now();
  return txn.Put(ColumnFamily::kTasks, keys::TaskHeader(header.task_id()), EncodeRecord(header));
}

absl::StatusOr<std::vector<v1::TaskFailure>> TaskStateStore::TxnRecentFailures(
    Transaction& txn, const StoredTaskHeader& header, int64_t window) {
  google::protobuf::RepeatedPtrField<v1::TaskFailure> records;
  RETURN_IF_ERROR(ReadHistory(txn, header.task_id(), keys::kTaskFailure,
                              header.failure_count() - window + 1, header.failure_count(),
                              &records));
  return std::vector<v1::TaskFailure>(std::make_move_iterator(records.begin()),
                                      std::make_move_iterator(records.end()));
}

absl::StatusOr<v1::TaskEscalation> TaskStateStore::TxnEscalate(Transaction& txn,
                                                               StoredTaskHeader& header,
                                                               int64_t steps,
                                                               absl::string_view reason,
                                                               bool forced) const {
  const int32_t from = EffectiveTier(header);
  const auto to = static_cast<int32_t>(std::min<int64_t>(ladder_size(), from + steps));
  v1::TaskEscalation record;
  record.set_seq(header.escalation_count() + 1);
  record.set_reason(std::string(reason));
  record.set_from_tier(from);
  record.set_to_tier(to);
  record.set_forced(forced);
  *record.mutable_time() = Now();
  RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                          keys::TaskHistoryRecord(header.task_id(), keys::kTaskEscalation,
                                                  static_cast<uint64_t>(record.seq())),
                          EncodeRecord(record)));
  header.set_escalation_count(record.seq());
  if (to != header.model_tier()) header.set_failures_at_tier(0);
  header.set_model_tier(to);
  return record;
}

absl::StatusOr<TaskStateStore::Removal> TaskStateStore::TxnRemoveTask(Transaction& txn,
                                                                      absl::string_view task_id,
                                                                      const Access& access) {
  Removal removal;
  absl::StatusOr<std::string> header =
      txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskHeader(task_id));
  if (!header.ok() && !absl::IsNotFound(header.status())) return header.status();
  absl::StatusOr<std::string> registered =
      txn.GetForUpdate(ColumnFamily::kTasks, keys::BlockedRegistry(task_id));
  if (!registered.ok() && !absl::IsNotFound(registered.status())) return registered.status();
  removal.had_state = header.ok();
  removal.was_blocked = registered.ok();
  if (!removal.had_state && !removal.was_blocked) return TaskNotFound(task_id);
  if (removal.had_state) {
    ASSIGN_OR_RETURN(const StoredTaskHeader decoded, DecodeAs<StoredTaskHeader>(*header));
    removal.owner = decoded.owner();
  } else {
    ASSIGN_OR_RETURN(const v1::BlockedTask entry, DecodeAs<v1::BlockedTask>(*registered));
    removal.owner = entry.owner();
  }
  RETURN_IF_ERROR(CheckChange(access, task_id, removal.owner));
  if (removal.was_blocked) {
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kTasks, keys::BlockedRegistry(task_id)));
  }
  // The header lock keeps appends out while the histories are removed.
  const std::string prefix = keys::TaskPrefix(task_id);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kTasks, it->key()));
  }
  RETURN_IF_ERROR(it->status());
  return removal;
}

// ---- Operations ----

absl::StatusOr<StoredTaskHeader> TaskStateStore::ReadHeader(absl::string_view task_id,
                                                            const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  absl::StatusOr<std::string> raw = store_->Get(ColumnFamily::kTasks, keys::TaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  ASSIGN_OR_RETURN(StoredTaskHeader header, DecodeAs<StoredTaskHeader>(*raw));
  // Exactly the answer for an unknown task, so that a read tells nobody the task exists.
  if (!access.Owns(header.owner())) return TaskNotFound(task_id);
  return header;
}

absl::StatusOr<TaskStateStore::ForAnalysis> TaskStateStore::ReadForAnalysis(
    absl::string_view task_id, int64_t window, const Access& access) {
  ForAnalysis read;
  ASSIGN_OR_RETURN(read.header, ReadHeader(task_id, access));
  google::protobuf::RepeatedPtrField<v1::TaskFailure> records;
  RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskFailure,
                              read.header.failure_count() - window + 1, read.header.failure_count(),
                              &records));
  read.recent.assign(std::make_move_iterator(records.begin()),
                     std::make_move_iterator(records.end()));
  return read;
}

absl::StatusOr<v1::InitTaskResponse> TaskStateStore::Init(
    absl::string_view description, const Access& access, std::optional<absl::string_view> id_text) {
  if (description.empty()) return absl::InvalidArgumentError("description is required");
  RETURN_IF_ERROR(common::ValidateSize("description", description, options_.max_description_bytes));
  if (id_text.has_value()) {
    RETURN_IF_ERROR(common::ValidateSize("id_text", *id_text, options_.max_description_bytes));
  }
  const std::string digest = Sha256Hex(id_text.value_or(description));
  if (digest.empty()) return absl::InternalError("SHA-256 is unavailable");
  v1::InitTaskResponse response;
  response.set_task_id(digest.substr(0, 8));
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    absl::StatusOr<std::string> existing =
        txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskHeader(response.task_id()));
    if (existing.ok()) {
      ASSIGN_OR_RETURN(StoredTaskHeader header, DecodeAs<StoredTaskHeader>(*existing));
      RETURN_IF_ERROR(CheckChange(access, response.task_id(), header.owner()));
      if (!header.description_sha256().empty() && header.description_sha256() != digest) {
        return absl::AlreadyExistsError(absl::StrCat(
            "task id ", response.task_id(),
            " is taken by another description whose SHA-256 starts the same way; clean up "
            "that task or change this description"));
      }
      response.set_created(false);
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    StoredTaskHeader header;
    header.set_task_id(response.task_id());
    header.set_description(std::string(description));
    header.set_description_sha256(digest);
    header.set_owner(access.principal);
    header.set_attempt_count(0);
    header.set_model_tier(1);
    *header.mutable_create_time() = Now();
    response.set_created(true);
    return TxnPutHeader(txn, header);
  }));
  if (response.created()) Changed(response.task_id());
  return response;
}

absl::StatusOr<v1::TaskState> TaskStateStore::GetState(absl::string_view task_id,
                                                       const Access& access) {
  ASSIGN_OR_RETURN(StoredTaskHeader header, ReadHeader(task_id, access));
  v1::TaskState state;
  state.set_task_id(header.task_id());
  state.set_description(header.description());
  state.set_attempt_count(header.attempt_count());
  state.set_model_tier(EffectiveTier(header));
  state.set_model(ModelName(state.model_tier()));
  *state.mutable_create_time() = header.create_time();
  *state.mutable_update_time() = header.update_time();
  *state.mutable_custom_fields() = header.custom_fields();
  state.set_blocked(header.blocked());
  if (header.blocked()) {
    *state.mutable_blocked_time() = header.blocked_time();
    state.set_block_reason(header.block_reason());
  }
  state.set_owner(header.owner());
  RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskFailure, 1, header.failure_count(),
                              state.mutable_failures()));
  RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskEscalation, 1, header.escalation_count(),
                              state.mutable_escalation_log()));
  RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskQualityGate, 1,
                              header.quality_gate_count(), state.mutable_quality_gate_results()));
  return state;
}

absl::StatusOr<std::string> TaskStateStore::GetField(absl::string_view task_id,
                                                     absl::string_view field,
                                                     const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  RETURN_IF_ERROR(ValidateFieldName(field));
  ASSIGN_OR_RETURN(StoredTaskHeader header, ReadHeader(task_id, access));
  switch (ParseField(field)) {
    case Field::kTaskId:
      return header.task_id();
    case Field::kTaskDesc:
      return header.description();
    case Field::kAttemptCount:
      return absl::StrCat(header.attempt_count());
    case Field::kModelTier:
      return absl::StrCat(EffectiveTier(header));
    case Field::kModel:
      return ModelName(EffectiveTier(header));
    case Field::kCreatedAt:
      return UnixSeconds(header.create_time());
    case Field::kBlocked:
      return std::string(header.blocked() ? "true" : "false");
    case Field::kBlockedAt:
      return header.blocked() ? UnixSeconds(header.blocked_time()) : std::string();
    case Field::kBlockReason:
      return header.blocked() ? header.block_reason() : std::string();
    case Field::kFailures:
    case Field::kEscalationLog:
    case Field::kQualityGateResults:
      return ListFieldJson(task_id, header, field);
    case Field::kCustom:
      break;
  }
  auto it = header.custom_fields().find(std::string(field));
  if (it == header.custom_fields().end()) {
    return absl::NotFoundError(absl::StrCat("task ", task_id, " has no field ", field));
  }
  return it->second;
}

absl::StatusOr<std::string> TaskStateStore::ListFieldJson(absl::string_view task_id,
                                                          const StoredTaskHeader& header,
                                                          absl::string_view field) {
  std::vector<std::string> items;
  if (field == "failures") {
    google::protobuf::RepeatedPtrField<v1::TaskFailure> records;
    RETURN_IF_ERROR(
        ReadHistory(*store_, task_id, keys::kTaskFailure, 1, header.failure_count(), &records));
    for (const v1::TaskFailure& r : records) {
      v1::AriaFailure item;
      item.set_attempt(r.attempt());
      item.set_error(r.error());
      item.set_model(r.model());
      item.set_timestamp(UnixSeconds(r.time()));
      items.push_back(common::CompactJson(item));
    }
  } else if (field == "escalation_log") {
    google::protobuf::RepeatedPtrField<v1::TaskEscalation> records;
    RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskEscalation, 1,
                                header.escalation_count(), &records));
    for (const v1::TaskEscalation& r : records) {
      // "forced" only on forced escalations, as the scripts wrote it.
      google::protobuf::Value reason;
      reason.set_string_value(r.reason());
      items.push_back(absl::StrCat("{\"timestamp\":\"", UnixSeconds(r.time()),
                                   "\",\"reason\":", common::CompactJson(reason),
                                   ",\"from_tier\":", r.from_tier(), ",\"to_tier\":", r.to_tier(),
                                   r.forced() ? ",\"forced\":true}" : "}"));
    }
  } else {
    google::protobuf::RepeatedPtrField<v1::QualityGateResult> records;
    RETURN_IF_ERROR(ReadHistory(*store_, task_id, keys::kTaskQualityGate, 1,
                                header.quality_gate_count(), &records));
    for (const v1::QualityGateResult& r : records) {
      v1::AriaQualityGate item;
      item.set_check(r.check());
      item.set_passed(r.passed());
      item.set_detail(r.detail());
      item.set_timestamp(UnixSeconds(r.time()));
      items.push_back(common::CompactJson(item));
    }
  }
  return absl::StrCat("[", absl::StrJoin(items, ","), "]");
}

absl::StatusOr<std::string> TaskStateStore::SetField(absl::string_view task_id,
                                                     absl::string_view field,
                                                     absl::string_view value,
                                                     const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  RETURN_IF_ERROR(ValidateFieldName(field));
  const Field known = ParseField(field);
  // Validate the value before touching the store, so a bad request changes nothing.
  int64_t number = 0;
  switch (known) {
    case Field::kTaskId:
    case Field::kModel:
      return absl::InvalidArgumentError(absl::StrCat(field, " is derived and cannot be set"));
    case Field::kBlocked:
    case Field::kBlockedAt:
    case Field::kBlockReason:
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is set by the loop breaker (breaker break / breaker cleanup), not by set"));
    case Field::kFailures:
      return absl::InvalidArgumentError("failures is a history: append with RecordFailure");
    case Field::kEscalationLog:
      return absl::InvalidArgumentError("escalation_log is a history: append with Escalate");
    case Field::kQualityGateResults:
      return absl::InvalidArgumentError(
          "quality_gate_results is a history: append with RecordQualityGate");
    case Field::kTaskDesc:
      if (value.empty()) return absl::InvalidArgumentError("task_desc cannot be empty");
      RETURN_IF_ERROR(common::ValidateSize("task_desc", value, options_.max_description_bytes));
      break;
    case Field::kAttemptCount: {
      ASSIGN_OR_RETURN(number, ParseInt(field, value, 0, std::numeric_limits<int32_t>::max()));
      break;
    }
    case Field::kModelTier: {
      ASSIGN_OR_RETURN(number, ParseInt(field, value, 1, ladder_size()));
      break;
    }
    case Field::kCreatedAt: {
      ASSIGN_OR_RETURN(number, ParseInt(field, value, 0, kMaxUnixSeconds));
      break;
    }
    case Field::kCustom:
      RETURN_IF_ERROR(common::ValidateSize(field, value, options_.max_field_value_bytes));
      break;
  }

  std::string stored;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(StoredTaskHeader header, TxnLockHeader(txn, task_id, access));
    switch (known) {
      case Field::kTaskDesc:
        header.set_description(std::string(value));
        stored = header.description();
        break;
      case Field::kAttemptCount:
        header.set_attempt_count(static_cast<int32_t>(number));
        stored = absl::StrCat(number);
        break;
      case Field::kModelTier:
        if (number != EffectiveTier(header)) header.set_failures_at_tier(0);
        header.set_model_tier(static_cast<int32_t>(number));
        stored = absl::StrCat(number);
        break;
      case Field::kCreatedAt:
        header.mutable_create_time()->set_seconds(number);
        header.mutable_create_time()->set_nanos(0);
        stored = absl::StrCat(number);
        break;
      default: {
        auto& custom = *header.mutable_custom_fields();
        const std::string key(field);
        if (!custom.contains(key) && custom.size() >= options_.max_custom_fields) {
          return absl::ResourceExhaustedError(
              absl::StrFormat("task %s already has %d custom fields; the limit is %d", task_id,
                              custom.size(), options_.max_custom_fields));
        }
        custom[key] = std::string(value);
        stored = custom[key];
        break;
      }
    }
    return TxnPutHeader(txn, header);
  }));
  Changed(task_id);
  return stored;
}

absl::StatusOr<int32_t> TaskStateStore::IncrementAttempt(absl::string_view task_id,
                                                         const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  int32_t count = 0;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(StoredTaskHeader header, TxnLockHeader(txn, task_id, access));
    if (header.blocked()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "task ", task_id, " is blocked by the loop breaker (", header.block_reason(),
          "); it takes no more attempts until it is cleaned up (breaker cleanup ", task_id, ")"));
    }
    if (header.attempt_count() == std::numeric_limits<int32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("task ", task_id, " has used every attempt number"));
    }
    header.set_attempt_count(header.attempt_count() + 1);
    count = header.attempt_count();
    return TxnPutHeader(txn, header);
  }));
  Changed(task_id);
  return count;
}

absl::StatusOr<v1::GetTierResponse> TaskStateStore::GetTier(absl::string_view task_id,
                                                            const Access& access) {
  ASSIGN_OR_RETURN(StoredTaskHeader header, ReadHeader(task_id, access));
  v1::GetTierResponse response;
  response.set_model_tier(EffectiveTier(header));
  response.set_model(ModelName(response.model_tier()));
  return response;
}

absl::StatusOr<v1::EscalateResponse> TaskStateStore::Escalate(const v1::EscalateRequest& request,
                                                              const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  const int64_t steps = request.has_steps() ? request.steps() : 1;
  if (steps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps must be at least 1, not ", steps, " (leave it unset for 1)"));
  }
  RETURN_IF_ERROR(common::ValidateSize("reason", request.reason(), options_.max_reason_bytes));
  v1::EscalateResponse response;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(StoredTaskHeader header, TxnLockHeader(txn, request.task_id(), access));
    ASSIGN_OR_RETURN(*response.mutable_escalation(),
                     TxnEscalate(txn, header, steps, request.reason(), /*forced=*/false));
    response.set_model_tier(header.model_tier());
    response.set_model(ModelName(header.model_tier()));
    return TxnPutHeader(txn, header);
  }));
  Changed(request.task_id());
  return response;
}

absl::StatusOr<v1::TaskFailure> TaskStateStore::RecordFailure(absl::string_view task_id,
                                                              absl::string_view error,
                                                              const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  if (error.empty()) return absl::InvalidArgumentError("error is required");
  RETURN_IF_ERROR(common::ValidateSize("error", error, options_.max_error_bytes));
  v1::TaskFailure failure;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(StoredTaskHeader header, TxnLockHeader(txn, task_id, access));
    failure.set_seq(header.failure_count() + 1);
    failure.set_attempt(header.attempt_count());
    failure.set_error(std::string(error));
    failure.set_tier(EffectiveTier(header));
    failure.set_model(ModelName(failure.tier()));
    *failure.mutable_time() = Now();
    RETURN_IF_ERROR(txn.Put(
        ColumnFamily::kTasks,
        keys::TaskHistoryRecord(task_id, keys::kTaskFailure, static_cast<uint64_t>(failure.seq())),
        EncodeRecord(failure)));
    header.set_failure_count(failure.seq());
    if (header.failures_at_tier() < std::numeric_limits<int32_t>::max()) {
      header.set_failures_at_tier(header.failures_at_tier() + 1);
    }
    return TxnPutHeader(txn, header);
  }));
  Changed(task_id);
  return failure;
}

absl::StatusOr<v1::QualityGateResult> TaskStateStore::RecordQualityGate(
    const v1::RecordQualityGateRequest& request, const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  RETURN_IF_ERROR(common::ValidateId("check", request.check()));
  RETURN_IF_ERROR(common::ValidateSize("detail", request.detail(), options_.max_detail_bytes));
  v1::QualityGateResult result;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(StoredTaskHeader header, TxnLockHeader(txn, request.task_id(), access));
    auto& streaks = *header.mutable_quality_gate_fail_streaks();
    if (request.passed()) {
      streaks.erase(request.check());
    } else if (auto it = streaks.find(request.check()); it != streaks.end()) {
      if (it->second < std::numeric_limits<int32_t>::max()) ++it->second;
    } else {
      if (streaks.size() >= options_.max_quality_gate_checks) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "task %s already tracks %d failing quality-gate checks; the limit is %d",
            request.task_id(), streaks.size(), options_.max_quality_gate_checks));
      }
      streaks[request.check()] = 1;
    }
    result.set_seq(header.quality_gate_count() + 1);
    result.set_check(request.check());
    result.set_passed(request.passed());
    result.set_detail(request.detail());
    *result.mutable_time() = Now();
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                            keys::TaskHistoryRecord(request.task_id(), keys::kTaskQualityGate,
                                                    static_cast<uint64_t>(result.seq())),
                            EncodeRecord(result)));
    header.set_quality_gate_count(result.seq());
    return TxnPutHeader(txn, header);
  }));
  Changed(request.task_id());
  return result;
}

absl::StatusOr<v1::GetFailureContextResponse> TaskStateStore::GetFailureContext(
    absl::string_view task_id, int32_t tail, const Access& access) {
  if (tail < 0) return absl::InvalidArgumentError("tail must not be negative");
  ASSIGN_OR_RETURN(StoredTaskHeader header, ReadHeader(task_id, access));
  const int64_t first = tail > 0 ? header.failure_count() - tail + 1 : 1;
  google::protobuf::RepeatedPtrField<v1::TaskFailure> records;
  RETURN_IF_ERROR(
      ReadHistory(*store_, task_id, keys::kTaskFailure, first, header.failure_count(), &records));
  std::vector<v1::TaskFailure> failures(records.begin(), records.end());
  v1::GetFailureContextResponse response;
  response.set_text(FormatFailureContext(failures));
  response.set_failure_count(static_cast<int32_t>(failures.size()));
  return response;
}

absl::StatusOr<bool> TaskStateStore::Cleanup(absl::string_view task_id, const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  Removal removal;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(removal, TxnRemoveTask(txn, task_id, access));
    return absl::OkStatus();
  }));
  Changed(task_id);
  return removal.was_blocked;
}

absl::StatusOr<v1::ListTasksResponse> TaskStateStore::List(const v1::ListTasksRequest& request,
                                                           const Access& access) {
  ASSIGN_OR_RETURN(const int page_size,
                   ResolvePageSize(request.page_size(), kDefaultPageSize, options_.max_page_size));
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "tasks", ""));
  const std::string all_prefix = keys::AllTasksPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kTasks, all_prefix, storage::PrefixUpperBound(all_prefix));
  if (!resume.empty()) it->Seek(keys::TaskPrefix(resume));
  v1::ListTasksResponse response;
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string task_id, reader.ReadString());
    ASSIGN_OR_RETURN(uint8_t kind, reader.ReadByte());
    if (kind == keys::kTaskHeader) {
      if (response.tasks_size() == page_size) {
        response.set_next_page_token(EncodePageToken("tasks", "", task_id));
        break;
      }
      ASSIGN_OR_RETURN(StoredTaskHeader header, DecodeAs<StoredTaskHeader>(it->value()));
      if (access.Owns(header.owner())) {
        v1::TaskSummary* summary = response.add_tasks();
        summary->set_task_id(header.task_id());
        summary->set_description(header.description());
        summary->set_attempt_count(header.attempt_count());
        summary->set_model_tier(EffectiveTier(header));
        summary->set_blocked(header.blocked());
        summary->set_owner(header.owner());
      }
    }
    // Skip the rest of this task's records (its histories) in one seek.
    it->Seek(storage::PrefixUpperBound(keys::TaskPrefix(task_id)));
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<int64_t> TaskStateStore::CountUnowned() {
  const std::string all_prefix = keys::AllTasksPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kTasks, all_prefix, storage::PrefixUpperBound(all_prefix));
  int64_t unowned = 0;
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string task_id, reader.ReadString());
    ASSIGN_OR_RETURN(uint8_t kind, reader.ReadByte());
    if (kind == keys::kTaskHeader) {
      ASSIGN_OR_RETURN(StoredTaskHeader header, DecodeAs<StoredTaskHeader>(it->value()));
      if (header.owner().empty()) ++unowned;
    }
    it->Seek(storage::PrefixUpperBound(keys::TaskPrefix(task_id)));
  }
  RETURN_IF_ERROR(it->status());
  return unowned;
}

}  // namespace coordinator
