#include "coordinator/store/exporter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;

absl::Status ExportCommands(ContextStore& contexts, absl::string_view context_id,
                            v1::ContextExport* out) {
  v1::ListCommandsRequest request;
  request.set_context_id(std::string(context_id));
  request.set_page_size(1000);
  do {
    ASSIGN_OR_RETURN(v1::ListCommandsResponse page, contexts.ListCommands(request));
    for (v1::CommandRecord& c : *page.mutable_commands()) *out->add_commands() = std::move(c);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return absl::OkStatus();
}

// OK with nothing added when the context has no conversation.
absl::Status ExportConversation(ConversationStore& conversations, absl::string_view context_id,
                                v1::ContextExport* out) {
  v1::GetConversationRequest request;
  request.set_context_id(std::string(context_id));
  request.set_page_size(1000);
  do {
    absl::StatusOr<v1::GetConversationResponse> page = conversations.Read(request);
    if (absl::IsNotFound(page.status())) return absl::OkStatus();
    RETURN_IF_ERROR(page.status());
    out->set_step_count(page->step_count());
    out->set_message_count(page->message_count());
    out->set_total_tokens(page->total_tokens());
    for (v1::ConversationMessage& m : *page->mutable_messages()) {
      *out->add_messages() = std::move(m);
    }
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return absl::OkStatus();
}

absl::Status ExportA2ATasks(A2ATasks& tasks, absl::string_view context_id, const Access& access,
                            v1::ContextExport* out) {
  lf::a2a::v1::ListTasksRequest request;
  request.set_context_id(std::string(context_id));
  request.set_page_size(100);
  request.set_history_length(0);
  std::vector<std::string> ids;
  do {
    ASSIGN_OR_RETURN(lf::a2a::v1::ListTasksResponse page, tasks.ListTasks(request, access));
    for (const lf::a2a::v1::Task& t : page.tasks()) ids.push_back(t.id());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(v1::StoredTask header, tasks.GetHeader(id));
    v1::ExportedA2ATask* exported = out->add_a2a_tasks();
    exported->set_tenant(header.tenant());
    ASSIGN_OR_RETURN(*exported->mutable_task(), tasks.GetTask("", id, std::nullopt));
    int64_t after = 0;
    while (true) {
      ASSIGN_OR_RETURN(std::vector<v1::StoredEvent> events, tasks.ReadEvents(id, after, 1000));
      if (events.empty()) break;
      after = events.back().seq();
      for (v1::StoredEvent& e : events) *exported->add_events() = std::move(e);
    }
  }
  return absl::OkStatus();
}

// Adds every breaker log entry about a task of `by_id` to it, oldest first.
absl::Status ExportBreakerLog(storage::Store& snapshot,
                              absl::flat_hash_map<std::string, v1::ExportedRetryTask*>& by_id) {
  const std::string prefix = keys::BreakerLogPrefix();
  std::unique_ptr<storage::Iterator> it =
      snapshot.NewIterator(ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    v1::BreakerLogEntry entry;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
    auto found = by_id.find(entry.task_id());
    if (found != by_id.end()) *found->second->add_breaker_log() = std::move(entry);
  }
  return it->status();
}

}  // namespace

std::string EvaluationRetryTaskId(absl::string_view context_id) {
  return TaskIdForDescription(absl::StrCat("rca-eval ", context_id));
}

absl::StatusOr<v1::ContextExport> Exporter::Export(const v1::ExportContextRequest& request,
                                                   const Access& access) {
  const std::string& context_id = request.context_id();
  RETURN_IF_ERROR(common::ValidateId("context_id", context_id));
  if (request.retry_task_ids_size() > kMaxExportRetryTaskIds) {
    return absl::InvalidArgumentError(absl::StrFormat("at most %d retry_task_ids, not %d",
                                                      kMaxExportRetryTaskIds,
                                                      request.retry_task_ids_size()));
  }
  std::vector<std::string> retry_ids = {EvaluationRetryTaskId(context_id)};
  for (const std::string& id : request.retry_task_ids()) {
    RETURN_IF_ERROR(common::ValidateId("retry_task_ids", id));
    if (std::find(retry_ids.begin(), retry_ids.end(), id) == retry_ids.end()) {
      retry_ids.push_back(id);
    }
  }

  ASSIGN_OR_RETURN(std::unique_ptr<storage::Store> snapshot, store_->NewSnapshot());
  v1::ContextExport out;
  out.set_context_id(context_id);
  *out.mutable_export_time() = ToProtoTime(absl::Now());

  ContextStore contexts(snapshot.get(), limits_);
  absl::StatusOr<v1::TaskContext> context = contexts.Get(context_id);
  if (context.ok()) {
    *out.mutable_context() = *std::move(context);
    RETURN_IF_ERROR(ExportCommands(contexts, context_id, &out));
  } else if (!absl::IsNotFound(context.status())) {
    return context.status();
  }
  ConversationStore conversations(snapshot.get(), limits_);
  RETURN_IF_ERROR(ExportConversation(conversations, context_id, &out));
  A2ATasks a2a(snapshot.get(), /*notifier=*/nullptr, limits_);
  RETURN_IF_ERROR(ExportA2ATasks(a2a, context_id, access, &out));
  if (!out.has_context() && out.message_count() == 0 && out.messages_size() == 0 &&
      out.a2a_tasks_size() == 0) {
    return absl::NotFoundError(absl::StrCat("nothing is stored under context ", context_id,
                                            " (no context, conversation or A2A task)"));
  }

  TaskStateStore tasks(snapshot.get(), task_state_);
  Breaker breaker(snapshot.get(), &tasks, breaker_);
  ASSIGN_OR_RETURN(v1::GetBreakerStatusResponse blocked, breaker.Status());
  absl::flat_hash_map<std::string, v1::ExportedRetryTask*> by_id;
  for (const std::string& id : retry_ids) {
    absl::StatusOr<v1::TaskState> state = tasks.GetState(id, access);  // not its own: absent
    if (absl::IsNotFound(state.status())) continue;
    RETURN_IF_ERROR(state.status());
    v1::ExportedRetryTask* exported = out.add_retry_tasks();
    *exported->mutable_state() = *std::move(state);
    by_id[id] = exported;
    for (const v1::BlockedTask& b : blocked.blocked_tasks()) {
      if (b.task_id() == id) *exported->mutable_blocked() = b;
    }
    absl::StatusOr<v1::GetBreakSummaryResponse> summary = breaker.GetSummary(id);
    if (summary.ok()) {
      exported->set_break_summary(summary->summary());
    } else if (!absl::IsNotFound(summary.status())) {
      return summary.status();
    }
  }
  if (!by_id.empty()) RETURN_IF_ERROR(ExportBreakerLog(*snapshot, by_id));
  if (out.ByteSizeLong() > kMaxExportBytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the export of context %s is %d bytes, over the %d byte limit", context_id,
                        out.ByteSizeLong(), kMaxExportBytes));
  }
  return out;
}

}  // namespace coordinator
