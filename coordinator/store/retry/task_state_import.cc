// TaskStateStore's imports: a task's whole state as a state file or another store had it, and a
// breaker registry entry alone, each checked whole before anything is written.
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/retry/task_state_records.h"
#include "coordinator/store/retry/task_state_store.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;
using task_state_records::DecodeAs;
using task_state_records::Field;
using task_state_records::ParseField;
using task_state_records::Sha256Hex;
using task_state_records::ValidateTimestamp;
using v1::StoredTaskHeader;

}  // namespace

absl::Status TaskStateStore::ValidateImport(const v1::TaskState& state) const {
  RETURN_IF_ERROR(common::ValidateId("task_id", state.task_id()));
  if (state.description().empty()) return absl::InvalidArgumentError("task_desc is required");
  RETURN_IF_ERROR(
      common::ValidateSize("task_desc", state.description(), options_.max_description_bytes));
  if (state.attempt_count() < 0) {
    return absl::InvalidArgumentError("attempt_count must not be negative");
  }
  if (state.model_tier() < 1 || state.model_tier() > ladder_size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("model_tier %d is not on this server's ladder of %d tiers",
                        state.model_tier(), ladder_size()));
  }
  RETURN_IF_ERROR(ValidateTimestamp("created_at", state.create_time()));
  const size_t max_records = options_.max_import_records;
  for (const auto& [name, size] : {std::pair<const char*, int>{"failures", state.failures_size()},
                                   {"escalation_log", state.escalation_log_size()},
                                   {"quality_gate_results", state.quality_gate_results_size()}}) {
    if (static_cast<size_t>(size) > max_records) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("%s has %d entries; the limit is %d", name, size, max_records));
    }
  }
  for (int i = 0; i < state.failures_size(); ++i) {
    const v1::TaskFailure& f = state.failures(i);
    const std::string where = absl::StrCat("failures[", i, "]");
    if (f.attempt() < 0) return absl::InvalidArgumentError(where + ".attempt is negative");
    if (f.error().empty()) return absl::InvalidArgumentError(where + ".error is empty");
    RETURN_IF_ERROR(common::ValidateSize(where + ".error", f.error(), options_.max_error_bytes));
    RETURN_IF_ERROR(common::ValidateOptionalId(where + ".model", f.model()));
    RETURN_IF_ERROR(ValidateTimestamp(where + ".timestamp", f.time()));
  }
  for (int i = 0; i < state.escalation_log_size(); ++i) {
    const v1::TaskEscalation& e = state.escalation_log(i);
    const std::string where = absl::StrCat("escalation_log[", i, "]");
    if (e.from_tier() < 0 || e.to_tier() < 0) {
      return absl::InvalidArgumentError(where + " has a negative tier");
    }
    RETURN_IF_ERROR(common::ValidateSize(where + ".reason", e.reason(), options_.max_reason_bytes));
    RETURN_IF_ERROR(ValidateTimestamp(where + ".timestamp", e.time()));
  }
  for (int i = 0; i < state.quality_gate_results_size(); ++i) {
    const v1::QualityGateResult& q = state.quality_gate_results(i);
    const std::string where = absl::StrCat("quality_gate_results[", i, "]");
    RETURN_IF_ERROR(common::ValidateId(where + ".check", q.check()));
    RETURN_IF_ERROR(common::ValidateSize(where + ".detail", q.detail(), options_.max_detail_bytes));
    RETURN_IF_ERROR(ValidateTimestamp(where + ".timestamp", q.time()));
  }
  if (static_cast<size_t>(state.custom_fields_size()) > options_.max_custom_fields) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the task has %d custom fields; the limit is %d",
                        state.custom_fields_size(), options_.max_custom_fields));
  }
  for (const auto& [name, value] : state.custom_fields()) {
    RETURN_IF_ERROR(ValidateFieldName(name));
    if (ParseField(name) != Field::kCustom) {
      return absl::InvalidArgumentError(
          absl::StrCat("custom field ", name, " has the name of a known field"));
    }
    RETURN_IF_ERROR(common::ValidateSize(name, value, options_.max_field_value_bytes));
  }
  if (state.blocked()) {
    RETURN_IF_ERROR(ValidateTimestamp("blocked_at", state.blocked_time()));
    RETURN_IF_ERROR(
        common::ValidateSize("block_reason", state.block_reason(), options_.max_reason_bytes));
  }
  return absl::OkStatus();
}

absl::Status TaskStateStore::ValidateImportedBlock(const v1::ImportedBlock& block) const {
  const v1::BlockedTask& entry = block.entry();
  RETURN_IF_ERROR(common::ValidateId("block.task_id", entry.task_id()));
  RETURN_IF_ERROR(
      common::ValidateSize("block.task_desc", entry.task_desc(), options_.max_description_bytes));
  RETURN_IF_ERROR(common::ValidateSize("block.reason", entry.reason(), options_.max_reason_bytes));
  RETURN_IF_ERROR(ValidateTimestamp("block.blocked_at", entry.blocked_time()));
  if (entry.attempt_count() < 0 || entry.final_tier() < 0) {
    return absl::InvalidArgumentError("block: attempts and final_tier must not be negative");
  }
  RETURN_IF_ERROR(common::ValidateOptionalId("block.pattern_type", entry.pattern_type()));
  RETURN_IF_ERROR(
      common::ValidateSize("block.summary", block.summary(), options_.max_imported_summary_bytes));
  if (block.has_analysis()) {
    const v1::LoopAnalysis& a = block.analysis().analysis();
    RETURN_IF_ERROR(common::ValidateOptionalId("block.analysis.task_id", a.task_id()));
    RETURN_IF_ERROR(common::ValidateSize("block.analysis.task_desc", a.task_desc(),
                                         options_.max_description_bytes));
    RETURN_IF_ERROR(common::ValidateOptionalId("block.analysis.pattern_type", a.pattern_type()));
    RETURN_IF_ERROR(common::ValidateSize("block.analysis.current_model", a.current_model(),
                                         options_.max_reason_bytes));
    RETURN_IF_ERROR(common::ValidateSize("block.analysis.latest_error", a.latest_error(),
                                         options_.max_error_bytes));
    RETURN_IF_ERROR(common::ValidateSize("block.analysis.suggested_action", a.suggested_action(),
                                         options_.max_reason_bytes));
    if (a.attempt_count() < 0 || a.current_tier() < 0 || a.escalations_done() < 0 ||
        a.repeated_error_count() < 0) {
      return absl::InvalidArgumentError("block.analysis: counts must not be negative");
    }
    RETURN_IF_ERROR(
        ValidateTimestamp("block.analysis.analysis_timestamp", block.analysis().time()));
  }
  return absl::OkStatus();
}

absl::StatusOr<StoredTaskHeader> TaskStateStore::ImportedHeader(
    const v1::ImportTaskRequest& request, const std::string& owner) const {
  const v1::TaskState& state = request.state();
  StoredTaskHeader header;
  header.set_task_id(state.task_id());
  header.set_description(state.description());
  header.set_description_sha256(Sha256Hex(state.description()));
  header.set_owner(owner);
  header.set_attempt_count(state.attempt_count());
  header.set_model_tier(state.model_tier());
  *header.mutable_create_time() = state.create_time();
  *header.mutable_custom_fields() = state.custom_fields();
  header.set_failure_count(state.failures_size());
  header.set_escalation_count(state.escalation_log_size());
  header.set_quality_gate_count(state.quality_gate_results_size());
  // Failures since the tier last changed: those after the last escalation that changed the
  // tier, counted back from the newest while they name the current tier's model.
  int64_t last_change = -1;
  for (const v1::TaskEscalation& e : state.escalation_log()) {
    if (e.from_tier() != e.to_tier()) last_change = std::max(last_change, e.time().seconds());
  }
  const std::string& current_model = ModelName(state.model_tier());
  int32_t at_tier = 0;
  for (int i = state.failures_size() - 1; i >= 0; --i) {
    const v1::TaskFailure& f = state.failures(i);
    if (f.model() != current_model || f.time().seconds() < last_change) break;
    ++at_tier;
  }
  header.set_failures_at_tier(at_tier);
  auto& streaks = *header.mutable_quality_gate_fail_streaks();
  for (const v1::QualityGateResult& q : state.quality_gate_results()) {
    if (q.passed()) {
      streaks.erase(q.check());
    } else {
      ++streaks[q.check()];
    }
  }
  if (streaks.size() > options_.max_quality_gate_checks) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%d quality-gate checks are failing; the limit is %d", streaks.size(),
                        options_.max_quality_gate_checks));
  }
  if (state.blocked()) {
    header.set_blocked(true);
    *header.mutable_blocked_time() = state.blocked_time();
    header.set_block_reason(state.block_reason());
  } else if (request.has_block()) {
    // In the registry but not marked in its state file (the file was rewritten after the
    // break): blocked all the same, as the registry says.
    header.set_blocked(true);
    *header.mutable_blocked_time() = request.block().entry().blocked_time();
    header.set_block_reason(request.block().entry().reason());
  }
  return header;
}

absl::Status TaskStateStore::TxnPutImportedHistory(Transaction& txn,
                                                   const v1::TaskState& state) const {
  for (int i = 0; i < state.failures_size(); ++i) {
    v1::TaskFailure f = state.failures(i);
    f.set_seq(i + 1);
    // The tier is the position of the model on this server's ladder (0 when not on it).
    const auto& ladder = options_.tier_ladder;
    const auto pos = std::find(ladder.begin(), ladder.end(), f.model());
    f.set_tier(pos == ladder.end() ? 0 : static_cast<int32_t>(pos - ladder.begin()) + 1);
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                            keys::TaskHistoryRecord(state.task_id(), keys::kTaskFailure,
                                                    static_cast<uint64_t>(f.seq())),
                            EncodeRecord(f)));
  }
  for (int i = 0; i < state.escalation_log_size(); ++i) {
    v1::TaskEscalation e = state.escalation_log(i);
    e.set_seq(i + 1);
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                            keys::TaskHistoryRecord(state.task_id(), keys::kTaskEscalation,
                                                    static_cast<uint64_t>(e.seq())),
                            EncodeRecord(e)));
  }
  for (int i = 0; i < state.quality_gate_results_size(); ++i) {
    v1::QualityGateResult q = state.quality_gate_results(i);
    q.set_seq(i + 1);
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                            keys::TaskHistoryRecord(state.task_id(), keys::kTaskQualityGate,
                                                    static_cast<uint64_t>(q.seq())),
                            EncodeRecord(q)));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ImportTaskResponse> TaskStateStore::Import(const v1::ImportTaskRequest& request,
                                                              const Access& access) {
  if (request.has_block()) {
    RETURN_IF_ERROR(ValidateImportedBlock(request.block()));
    // Without a state only the block is loaded: the scripts' registry outlived state files.
    if (request.state().task_id().empty() && request.state().description().empty()) {
      return ImportBlockOnly(request, access);
    }
    if (request.block().entry().task_id() != request.state().task_id()) {
      return absl::InvalidArgumentError(
          absl::StrCat("block.task_id ", request.block().entry().task_id(),
                       " is not the state's task_id ", request.state().task_id()));
    }
  }
  const v1::TaskState& state = request.state();
  RETURN_IF_ERROR(ValidateImport(state));
  RETURN_IF_ERROR(common::ValidateOptionalId("owner", state.owner()));
  const std::string owner = state.owner().empty() ? access.principal : state.owner();
  if (access.scoped && owner != access.principal) {
    return absl::PermissionDeniedError(absl::StrCat(access.principal, " may not import task ",
                                                    state.task_id(), " for \"", owner,
                                                    "\": an agent imports only its own tasks"));
  }

  ASSIGN_OR_RETURN(StoredTaskHeader header, ImportedHeader(request, owner));

  v1::ImportTaskResponse response;
  response.set_task_id(state.task_id());
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    absl::StatusOr<std::string> existing =
        txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskHeader(state.task_id()));
    if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
    absl::StatusOr<std::string> registered =
        txn.GetForUpdate(ColumnFamily::kTasks, keys::BlockedRegistry(state.task_id()));
    if (!registered.ok() && !absl::IsNotFound(registered.status())) return registered.status();
    if (existing.ok() || registered.ok()) {
      RETURN_IF_ERROR(
          CheckReplace(txn, state.task_id(), existing, registered, request.replace(), access));
      response.set_replaced(true);
    }
    RETURN_IF_ERROR(TxnPutImportedHistory(txn, state));
    if (header.blocked()) {
      v1::ImportedBlock block;
      if (request.has_block()) {
        block = request.block();
      } else {
        // A blocked state file without the registry: the entry is made from the state.
        v1::BlockedTask* entry = block.mutable_entry();
        entry->set_task_id(header.task_id());
        entry->set_task_desc(header.description());
        entry->set_reason(header.block_reason());
        *entry->mutable_blocked_time() = header.blocked_time();
        entry->set_attempt_count(header.attempt_count());
        entry->set_final_tier(header.model_tier());
        entry->set_pattern_type("unknown");
      }
      RETURN_IF_ERROR(TxnPutImportedBlock(txn, std::move(block), header.owner()));
    }
    return TxnPutHeader(txn, header);
  }));
  Changed(state.task_id());
  return response;
}

absl::Status TaskStateStore::CheckReplace(Transaction& txn, absl::string_view task_id,
                                          const absl::StatusOr<std::string>& existing,
                                          const absl::StatusOr<std::string>& registered,
                                          bool replace, const Access& access) {
  // Replacing another's task is a change of it, refused before ALREADY_EXISTS tells more.
  std::string current_owner;
  if (existing.ok()) {
    ASSIGN_OR_RETURN(const StoredTaskHeader current, DecodeAs<StoredTaskHeader>(*existing));
    current_owner = current.owner();
  } else {
    ASSIGN_OR_RETURN(const v1::BlockedTask entry, DecodeAs<v1::BlockedTask>(*registered));
    current_owner = entry.owner();
  }
  RETURN_IF_ERROR(CheckChange(access, task_id, current_owner));
  if (!replace) {
    return absl::AlreadyExistsError(
        absl::StrCat("task ", task_id, " already exists (import with replace to overwrite it)"));
  }
  return TxnRemoveTask(txn, task_id, access).status();
}

absl::Status TaskStateStore::TxnPutImportedBlock(Transaction& txn, v1::ImportedBlock block,
                                                 const std::string& owner) {
  v1::BlockedTask& entry = *block.mutable_entry();
  entry.set_owner(owner);
  v1::StoredBreakSummary summary;
  if (!block.summary().empty()) {
    summary.set_summary(block.summary());
  } else {
    summary.set_summary(absl::StrCat(
        "Task ", entry.task_id(), " was blocked by the ARIA scripts at ",
        absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", FromProtoTime(entry.blocked_time()),
                         absl::UTCTimeZone()),
        ".\nReason: ", entry.reason(), "\n",
        block.has_analysis()
            ? absl::StrCat("Imported without its summary file; the scripts' loop analysis at "
                           "the block: pattern ",
                           block.analysis().analysis().pattern_type(), ", suggested action: ",
                           block.analysis().analysis().suggested_action(), "\n")
            : std::string("Imported from a script state file; the scripts' loop analysis was "
                          "not kept.\n"),
        "Run `coordctl breaker analyze ", entry.task_id(), "` for a fresh one.\n"));
  }
  if (block.has_analysis()) {
    *summary.mutable_analysis() = std::move(*block.mutable_analysis());
    summary.mutable_analysis()->set_source("aria-scripts");
  }
  RETURN_IF_ERROR(
      txn.Put(ColumnFamily::kTasks, keys::BlockedRegistry(entry.task_id()), EncodeRecord(entry)));
  return txn.Put(ColumnFamily::kTasks, keys::TaskBreakSummary(entry.task_id()),
                 EncodeRecord(summary));
}

absl::StatusOr<v1::ImportTaskResponse> TaskStateStore::ImportBlockOnly(
    const v1::ImportTaskRequest& request, const Access& access) {
  const std::string& task_id = request.block().entry().task_id();
  RETURN_IF_ERROR(common::ValidateOptionalId("owner", request.state().owner()));
  const std::string owner =
      request.state().owner().empty() ? access.principal : request.state().owner();
  if (access.scoped && owner != access.principal) {
    return absl::PermissionDeniedError(absl::StrCat(access.principal, " may not import task ",
                                                    task_id, " for \"", owner,
                                                    "\": an agent imports only its own tasks"));
  }
  v1::ImportTaskResponse response;
  response.set_task_id(task_id);
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    absl::StatusOr<std::string> existing =
        txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskHeader(task_id));
    if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
    absl::StatusOr<std::string> registered =
        txn.GetForUpdate(ColumnFamily::kTasks, keys::BlockedRegistry(task_id));
    if (!registered.ok() && !absl::IsNotFound(registered.status())) return registered.status();
    if (existing.ok() || registered.ok()) {
      RETURN_IF_ERROR(CheckReplace(txn, task_id, existing, registered, request.replace(), access));
      response.set_replaced(true);
    }
    return TxnPutImportedBlock(txn, request.block(), owner);
  }));
  Changed(task_id);
  return response;
}

}  // namespace coordinator
