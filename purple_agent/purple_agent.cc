#include "purple_agent/purple_agent.h"

#include <utility>
#include <vector>

#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/uuid.h"

namespace purple_agent {
namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
using agent_runtime::CallWithRetry;

constexpr char kAttemptPrefix[] = "attempt ";
constexpr char kFinalPrefix[] = "final: ";
constexpr char kFinalOk[] = "final: completed: ";
constexpr char kFinalFailed[] = "final: failed: ";
constexpr char kEscalationMark[] = "rca_escalation_mark";

std::string TaskIdOf(const std::string& task_text) {
  const size_t at = task_text.find("Task ID:");
  if (at == std::string::npos) return "";
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(
      absl::string_view(task_text).substr(at + std::strlen("Task ID:")));
  return std::string(rest.substr(0, rest.find_first_of(" \t\r\n")));
}

// "attempt N: ..." → N; "attempt N failed: ..." → N with *failed; else 0.
int ParseAttemptMarker(const std::string& text, bool* failed, std::string* rest) {
  absl::string_view v(text);
  if (!absl::ConsumePrefix(&v, kAttemptPrefix)) return 0;
  const size_t end = v.find_first_of(" :");
  int n = 0;
  if (end == absl::string_view::npos || !absl::SimpleAtoi(v.substr(0, end), &n)) return 0;
  v.remove_prefix(end);
  *failed = absl::ConsumePrefix(&v, " failed: ");
  if (!*failed && !absl::ConsumePrefix(&v, ": ")) return 0;
  *rest = std::string(v);
  return n;
}

bool IsExecute(const std::string& action) { return absl::StartsWith(action, "execute:"); }
bool IsSubmit(const std::string& action) {
  return action == "submit" || absl::StartsWith(action, "submit:") ||
         absl::StartsWith(action, "submit ");
}

std::string FirstLine(absl::string_view s) {
  return std::string(s.substr(0, std::min(s.find('\n'), size_t{200})));
}

}  // namespace

// One evaluation's loop. Every step first reads where it is from `msgs_` (the conversation,
// loaded from the coordinator at the start and appended to as it goes).
class PurpleAgent::Loop {
  struct Msg {
    v1::Role role;
    std::string text;
  };

 public:
  Loop(PurpleAgent* agent, std::string context_id, std::string task_text)
      : agent_(agent), context_id_(std::move(context_id)), task_text_(std::move(task_text)) {}

  Outcome Run() {
    absl::Status s = Load();
    if (!s.ok()) return Interrupted(s);
    if (msgs_.empty()) {
      if (task_text_.empty()) return Final(false, "the evaluation's task text is unknown");
      if (absl::Status a = Append(v1::ROLE_USER, task_text_, EstimateTokens(task_text_)); !a.ok()) {
        return Interrupted(a);
      }
    }
    task_text_ = msgs_[0].text;
    task_id_ = TaskIdOf(task_text_);
    v1::InitTaskRequest init;
    init.set_description(absl::StrCat("rca-eval ", context_id_));
    v1::InitTaskResponse inited;
    s = Call(
        [&](grpc::ClientContext* c) { return agent_->task_state_->InitTask(c, init, &inited); });
    if (!s.ok()) return Interrupted(s);
    retry_task_ = inited.task_id();
    while (true) {
      if (agent_->stopping()) return Outcome{};
      absl::StatusOr<std::optional<Outcome>> step = Step();
      if (!step.ok()) return Interrupted(step.status());
      if (step->has_value()) return **step;
    }
  }

 private:
  Outcome Interrupted(const absl::Status& s) {
    if (!agent_->stopping())
      common::LogWarn({{"context_id", context_id_}, {"agent", agent_->options_.name}},
                      "interrupted: %s", s.message());
    return Outcome{};
  }

  absl::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& call) {
    return CallWithRetry(call, agent_->options_.retry, [this] { return agent_->stopping(); });
  }

  absl::Status Load() {
    v1::GetConversationRequest request;
    request.set_context_id(context_id_);
    request.set_page_size(1000);
    msgs_.clear();
    total_tokens_ = 0;
    while (true) {
      v1::GetConversationResponse page;
      absl::Status s = Call([&](grpc::ClientContext* c) {
        return agent_->conversations_->GetConversation(c, request, &page);
      });
      if (absl::IsNotFound(s)) return absl::OkStatus();
      RETURN_IF_ERROR(s);
      for (const v1::ConversationMessage& m : page.messages())
        msgs_.push_back({m.role(), m.text()});
      total_tokens_ = page.total_tokens();
      if (page.next_page_token().empty()) return absl::OkStatus();
      request.set_page_token(page.next_page_token());
    }
  }

  // Appends one message. Its request_id, the same on every retry, makes the coordinator answer
  // a retry whose original was appended (its answer lost) from the record: appended once.
  absl::Status Append(v1::Role role, const std::string& text, int64_t tokens) {
    v1::AppendMessageRequest request;
    request.set_context_id(context_id_);
    request.set_role(role);
    request.set_text(text);
    request.set_tokens(tokens);
    request.set_request_id(common::NewUuid());
    v1::AppendMessageResponse response;
    RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
      return agent_->conversations_->AppendMessage(c, request, &response);
    }));
    msgs_.push_back({role, text});
    total_tokens_ = response.total_tokens();
    return absl::OkStatus();
  }

  // One step of the state machine; a value when the evaluation has ended.
  absl::StatusOr<std::optional<Outcome>> Step() {
    // Where are we? The last SYSTEM marker says.
    int attempt = 0, marker_index = -1;
    bool failed = false;
    std::string marker_rest;
    for (size_t i = 0; i < msgs_.size(); ++i) {
      if (msgs_[i].role != v1::ROLE_SYSTEM) continue;
      if (absl::StartsWith(msgs_[i].text, kFinalPrefix)) {
        Outcome o;
        o.finished = true;
        o.ok = absl::StartsWith(msgs_[i].text, kFinalOk);
        o.text = msgs_[i].text.substr(o.ok ? std::strlen(kFinalOk) : std::strlen(kFinalFailed));
        return std::optional<Outcome>(o);
      }
      bool f = false;
      std::string rest;
      const int n = ParseAttemptMarker(msgs_[i].text, &f, &rest);
      if (n == 0) continue;
      attempt = n;
      failed = f;
      marker_rest = rest;
      marker_index = static_cast<int>(i);
    }
    if (attempt == 0 || failed) {
      if (failed) {
        ASSIGN_OR_RETURN(std::optional<Outcome> broken, HandleFailure(attempt, marker_rest));
        if (broken.has_value()) return broken;
      }
      ASSIGN_OR_RETURN(std::optional<Outcome> blocked, StartAttempt(attempt + 1));
      if (blocked.has_value()) return blocked;
      return std::optional<Outcome>();
    }
    // Inside attempt `attempt`: its actions and observations follow the marker.
    std::vector<std::string> actions;
    for (size_t i = marker_index + 1; i < msgs_.size(); ++i) {
      if (msgs_[i].role == v1::ROLE_AGENT) actions.push_back(msgs_[i].text);
    }
    if (msgs_.back().role == v1::ROLE_AGENT) return Perform(attempt, msgs_.back().text);
    if (static_cast<int>(actions.size()) >= agent_->options_.max_steps) {
      return FailAttempt(attempt, absl::StrCat("step limit of ", agent_->options_.max_steps,
                                               " reached without a submission"));
    }
    if (total_tokens_ >= agent_->options_.token_budget) {
      return std::optional<Outcome>(
          Final(false, absl::StrCat("token budget of ", agent_->options_.token_budget,
                                    " exhausted after ", total_tokens_, " tokens")));
    }
    PolicyInput input;
    input.context_id = context_id_;
    input.task_id = task_id_;
    input.step = static_cast<int>(actions.size());
    input.attempt = attempt;
    const size_t newline = marker_rest.find('\n');
    input.failure_context = newline == std::string::npos ? "" : marker_rest.substr(newline + 1);
    v1::GetTierRequest tier_request;
    tier_request.set_task_id(retry_task_);
    v1::GetTierResponse tier;
    RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
      return agent_->task_state_->GetTier(c, tier_request, &tier);
    }));
    input.tier = tier.model_tier();
    input.model = tier.model();
    input.turns.push_back({"user", task_text_});
    for (size_t i = marker_index + 1; i < msgs_.size(); ++i) {
      input.turns.push_back(
          {msgs_[i].role == v1::ROLE_AGENT ? "assistant" : "user", msgs_[i].text});
    }
    absl::StatusOr<PolicyOutput> next = agent_->policy_->Next(input);
    if (!next.ok()) {
      if (agent_->stopping()) return absl::CancelledError("stopping");
      return FailAttempt(attempt, absl::StrCat("policy error: ", next.status().message()));
    }
    const std::string action(absl::StripAsciiWhitespace(next->action));
    RETURN_IF_ERROR(Append(v1::ROLE_AGENT, action, next->tokens));
    return Perform(attempt, action);
  }

  // Carries out the last action (just chosen, or found without its observation on resume).
  absl::StatusOr<std::optional<Outcome>> Perform(int attempt, const std::string& action) {
    auto stop = [this] { return agent_->stopping(); };
    if (IsExecute(action)) {
      int64_t exec_seq = 0;
      for (const Msg& m : msgs_) exec_seq += (m.role == v1::ROLE_AGENT && IsExecute(m.text));
      a2apb::Message message;
      message.set_role(a2apb::ROLE_USER);
      message.set_context_id(context_id_);
      message.add_parts()->set_text(action);
      (*message.mutable_metadata()->mutable_fields())["exec_seq"].set_number_value(
          static_cast<double>(exec_seq));
      absl::StatusOr<a2apb::Task> task = agent_->gateway_.SendAndWait(
          agent_->options_.green_agent, message, agent_->options_.green_timeout, stop);
      if (!task.ok()) return task.status();
      std::string observation;
      if (task->status().state() == a2apb::TASK_STATE_COMPLETED) {
        int exit_code = 0;
        std::string output;
        for (const a2apb::Artifact& artifact : task->artifacts()) {
          if (artifact.artifact_id() != "result") continue;
          for (const a2apb::Part& part : artifact.parts()) {
            if (part.has_text()) output = part.text();
            if (part.has_data() && part.data().has_struct_value()) {
              auto it = part.data().struct_value().fields().find("exit_code");
              if (it != part.data().struct_value().fields().end()) {
                exit_code = static_cast<int>(it->second.number_value());
              }
            }
          }
        }
        observation = absl::StrCat("exit code ", exit_code, "\n", output);
      } else {
        observation = absl::StrCat("error: ", a2apb::TaskState_Name(task->status().state()), ": ",
                                   agent_runtime::StatusText(*task));
      }
      RETURN_IF_ERROR(Append(v1::ROLE_USER, observation, EstimateTokens(observation)));
      return CheckRepeatedFailure(attempt);
    }
    if (IsSubmit(action)) {
      a2apb::Message message;
      message.set_role(a2apb::ROLE_USER);
      message.set_context_id(context_id_);
      message.add_parts()->set_text("submit");
      absl::StatusOr<a2apb::Task> task = agent_->gateway_.SendAndWait(
          agent_->options_.green_agent, message, agent_->options_.green_timeout, stop);
      if (!task.ok()) return task.status();
      const std::string text = agent_runtime::StatusText(*task);
      const bool ok = task->status().state() == a2apb::TASK_STATE_COMPLETED;
      const std::string observation =
          ok ? absl::StrCat("score: ", text) : absl::StrCat("submission failed: ", text);
      RETURN_IF_ERROR(Append(v1::ROLE_USER, observation, EstimateTokens(observation)));
      return std::optional<Outcome>(
          Final(ok, ok ? absl::StrCat("submitted; score: ", text) : observation,
                /*tell_green=*/false));
    }
    const std::string observation =
        "error: unrecognized action; reply with \"execute: <command>\" or \"submit\"";
    RETURN_IF_ERROR(Append(v1::ROLE_USER, observation, EstimateTokens(observation)));
    return std::optional<Outcome>();
  }

  // The same command failing the same way twice in a row ends the attempt: the policy is
  // stuck, and the breaker should see it.
  absl::StatusOr<std::optional<Outcome>> CheckRepeatedFailure(int attempt) {
    const size_t n = msgs_.size();
    if (n < 4) return std::optional<Outcome>();
    const Msg& a1 = msgs_[n - 4];
    const Msg& o1 = msgs_[n - 3];
    const Msg& a2 = msgs_[n - 2];
    const Msg& o2 = msgs_[n - 1];
    if (a1.role != v1::ROLE_AGENT || a2.role != v1::ROLE_AGENT || a1.text != a2.text ||
        o1.text != o2.text || absl::StartsWith(o2.text, "exit code 0\n")) {
      return std::optional<Outcome>();
    }
    return FailAttempt(
        attempt, absl::StrCat("repeated failing command: ", a2.text.substr(std::strlen("execute:")),
                              " -> ", FirstLine(o2.text)));
  }

  absl::StatusOr<std::optional<Outcome>> FailAttempt(int attempt, const std::string& error) {
    common::LogInfo({{"context_id", context_id_}, {"agent", agent_->options_.name}},
                    "attempt %d failed: %s", attempt, error);
    RETURN_IF_ERROR(
        Append(v1::ROLE_SYSTEM, absl::StrCat(kAttemptPrefix, attempt, " failed: ", error), 0));
    return std::optional<Outcome>();
  }

  absl::StatusOr<v1::TaskState> State() {
    v1::GetTaskStateRequest request;
    request.set_task_id(retry_task_);
    v1::TaskState state;
    RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
      return agent_->task_state_->GetTaskState(c, request, &state);
    }));
    return state;
  }

  // Records attempt `attempt`'s failure and escalates as the breaker says. Idempotent: the
  // failure is recorded when fewer than `attempt` are, and the escalation happens when the
  // escalation log has not grown since the mark set for this attempt.
  absl::StatusOr<std::optional<Outcome>> HandleFailure(int attempt, const std::string& error) {
    ASSIGN_OR_RETURN(v1::TaskState state, State());
    if (state.blocked()) return Broken("");
    if (state.failures_size() < attempt) {
      v1::RecordFailureRequest request;
      request.set_task_id(retry_task_);
      request.set_error(error);
      v1::RecordFailureResponse response;
      RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
        return agent_->task_state_->RecordFailure(c, request, &response);
      }));
    }
    if (attempt >= agent_->options_.max_attempts) {
      return Break(absl::StrCat("no submission after ", attempt, " attempts"));
    }
    // The escalation mark: "<attempt>:<escalations before>".
    int base = state.escalation_log_size();
    auto mark = state.custom_fields().find(kEscalationMark);
    std::vector<std::string> parts;
    if (mark != state.custom_fields().end()) parts = absl::StrSplit(mark->second, ':');
    int marked_attempt = 0, marked_base = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &marked_attempt) &&
        absl::SimpleAtoi(parts[1], &marked_base) && marked_attempt == attempt) {
      base = marked_base;
    } else {
      v1::SetTaskFieldRequest set;
      set.set_task_id(retry_task_);
      set.set_field(kEscalationMark);
      set.set_value(absl::StrCat(attempt, ":", base));
      v1::SetTaskFieldResponse set_response;
      RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
        return agent_->task_state_->SetTaskField(c, set, &set_response);
      }));
    }
    if (state.escalation_log_size() > base) return std::optional<Outcome>();  // done before

    v1::CheckLoopRequest check;
    check.set_task_id(retry_task_);
    v1::CheckLoopResponse loop;
    RETURN_IF_ERROR(
        Call([&](grpc::ClientContext* c) { return agent_->breaker_->CheckLoop(c, check, &loop); }));
    if (loop.looping()) {
      v1::ForceEscalateRequest force;
      force.set_task_id(retry_task_);
      force.set_reason(absl::StrCat("loop detected (", loop.pattern_type(), "): ", error));
      v1::ForceEscalateResponse forced;
      RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
        return agent_->breaker_->ForceEscalate(c, force, &forced);
      }));
      common::LogInfo({{"context_id", context_id_}, {"agent", agent_->options_.name}},
                      "loop %s; force-escalated tier %d -> %d", loop.pattern_type(),
                      forced.from_tier(), forced.to_tier());
      if (forced.result() == v1::FORCE_ESCALATE_RESULT_HUMAN_INTERVENTION_REQUIRED) {
        return Break(absl::StrCat("loop (", loop.pattern_type(), ") at the top of the ladder"));
      }
      return std::optional<Outcome>();
    }
    v1::EscalateRequest escalate;
    escalate.set_task_id(retry_task_);
    escalate.set_reason(error);
    v1::EscalateResponse escalated;
    RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
      return agent_->task_state_->Escalate(c, escalate, &escalated);
    }));
    common::LogInfo({{"context_id", context_id_}, {"agent", agent_->options_.name}},
                    "escalated to tier %d (%s)", escalated.model_tier(), escalated.model());
    return std::optional<Outcome>();
  }

  absl::StatusOr<std::optional<Outcome>> Break(const std::string& reason) {
    v1::BreakRequest request;
    request.set_task_id(retry_task_);
    request.set_reason(reason);
    v1::BreakResponse response;
    absl::Status s = Call(
        [&](grpc::ClientContext* c) { return agent_->breaker_->Break(c, request, &response); });
    if (s.ok()) return Broken(response.summary());
    if (!absl::IsAlreadyExists(s)) return s;
    return Broken("");
  }

  // The task is blocked: the evaluation ends FAILED with the breaker's summary.
  absl::StatusOr<std::optional<Outcome>> Broken(std::string summary) {
    if (summary.empty()) {
      v1::GetBreakSummaryRequest request;
      request.set_task_id(retry_task_);
      v1::GetBreakSummaryResponse response;
      absl::Status s = Call([&](grpc::ClientContext* c) {
        return agent_->breaker_->GetBreakSummary(c, request, &response);
      });
      summary = s.ok() ? response.summary() : "stopped by the loop breaker";
    }
    ASSIGN_OR_RETURN(Outcome o, FinalOr(false, summary, /*tell_green=*/true));
    return std::optional<Outcome>(o);
  }

  absl::StatusOr<std::optional<Outcome>> StartAttempt(int attempt) {
    ASSIGN_OR_RETURN(v1::TaskState state, State());
    if (state.blocked()) return Broken("");
    if (state.attempt_count() < attempt) {
      v1::IncrementAttemptRequest request;
      request.set_task_id(retry_task_);
      v1::IncrementAttemptResponse response;
      absl::Status s = Call([&](grpc::ClientContext* c) {
        return agent_->task_state_->IncrementAttempt(c, request, &response);
      });
      if (absl::IsFailedPrecondition(s)) return Broken("");
      RETURN_IF_ERROR(s);
    }
    v1::GetFailureContextRequest fc_request;
    fc_request.set_task_id(retry_task_);
    v1::GetFailureContextResponse failure_context;
    RETURN_IF_ERROR(Call([&](grpc::ClientContext* c) {
      return agent_->task_state_->GetFailureContext(c, fc_request, &failure_context);
    }));
    std::string text = absl::StrCat(kAttemptPrefix, attempt, ": tier ", state.model_tier(),
                                    " (model ", state.model(), ")");
    if (!failure_context.text().empty()) absl::StrAppend(&text, "\n", failure_context.text());
    common::LogInfo({{"context_id", context_id_}, {"agent", agent_->options_.name}},
                    "attempt %d at tier %d (%s)", attempt, state.model_tier(), state.model());
    RETURN_IF_ERROR(Append(v1::ROLE_SYSTEM, text, 0));
    return std::optional<Outcome>();
  }

  Outcome Final(bool ok, const std::string& text, bool tell_green = true) {
    absl::StatusOr<Outcome> o = FinalOr(ok, text, tell_green);
    return o.ok() ? *o : Interrupted(o.status());
  }

  // Ends the evaluation: the green agent is told first when it does not know yet (so its
  // judge's task ends too), then the final marker is stored.
  absl::StatusOr<Outcome> FinalOr(bool ok, const std::string& text, bool tell_green) {
    if (!ok && tell_green) {
      a2apb::Message message;
      message.set_role(a2apb::ROLE_USER);
      message.set_context_id(context_id_);
      message.add_parts()->set_text(absl::StrCat("abandon: ", text));
      absl::StatusOr<a2apb::Task> task = agent_->gateway_.SendAndWait(
          agent_->options_.green_agent, message, agent_->options_.green_timeout,
          [this] { return agent_->stopping(); });
      if (!task.ok() && (absl::IsCancelled(task.status()) || absl::IsUnavailable(task.status()))) {
        return task.status();
      }
    }
    RETURN_IF_ERROR(Append(v1::ROLE_SYSTEM, absl::StrCat(ok ? kFinalOk : kFinalFailed, text), 0));
    common::LogInfo({{"context_id", context_id_}, {"agent", agent_->options_.name}}, "%s: %s",
                    ok ? "completed" : "failed", text);
    Outcome o;
    o.finished = true;
    o.ok = ok;
    o.text = text;
    return o;
  }

  PurpleAgent* agent_;
  const std::string context_id_;
  std::string task_text_;
  std::string task_id_;
  std::string retry_task_;
  std::vector<Msg> msgs_;
  int64_t total_tokens_ = 0;
};

PurpleAgent::PurpleAgent(PurpleOptions options, std::shared_ptr<grpc::Channel> coordinator,
                         std::unique_ptr<Policy> policy)
    : options_(std::move(options)),
      policy_(std::move(policy)),
      conversations_(v1::ConversationService::NewStub(coordinator)),
      task_state_(v1::TaskStateService::NewStub(coordinator)),
      breaker_(v1::BreakerService::NewStub(coordinator)),
      gateway_(coordinator, options_.retry) {}

PurpleAgent::~PurpleAgent() { Shutdown(); }

bool PurpleAgent::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void PurpleAgent::Shutdown() {
  std::vector<std::shared_ptr<Worker>> workers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, w] : workers_) workers.push_back(w);
  }
  if (resume_thread_.joinable()) resume_thread_.join();
  for (auto& w : workers) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::shared_ptr<PurpleAgent::Worker> PurpleAgent::EnsureWorker(const std::string& context_id,
                                                               const std::string& task) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Worker>& slot = workers_[context_id];
  if (slot != nullptr && !(slot->done.HasBeenNotified() && !slot->outcome.finished)) return slot;
  if (slot != nullptr && slot->thread.joinable()) slot->thread.detach();  // it has returned
  if (stopping_) {
    auto idle = std::make_shared<Worker>();
    idle->done.Notify();
    return idle;
  }
  auto worker = std::make_shared<Worker>();
  slot = worker;
  common::LogInfo({{"context_id", context_id}, {"agent", options_.name}}, "evaluation loop starts");
  worker->thread = std::thread([this, worker, context_id, task] {
    Loop loop(this, context_id, task);
    worker->outcome = loop.Run();
    worker->done.Notify();
  });
  return worker;
}

void PurpleAgent::Execute(const agent_runtime::RequestContext& request,
                          agent_runtime::EventPublisher& events) {
  std::string text;
  for (const a2apb::Part& part : request.message.parts()) {
    if (!part.has_text()) continue;
    if (!text.empty()) text += "\n\n";
    text += part.text();
  }
  if (TaskIdOf(text).empty()) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                        "expected a formatted root-cause-analysis task (with a \"Task ID:\" line)");
    return;
  }
  std::shared_ptr<Worker> worker = EnsureWorker(request.context_id, text);
  events.UpdateStatus(a2apb::TASK_STATE_WORKING, absl::StrCat("working on ", TaskIdOf(text),
                                                              " in context ", request.context_id));
  while (!worker->done.WaitForNotificationWithTimeout(absl::Milliseconds(200))) {
    if (events.cancelled()) return;  // the loop goes on; the coordinator delivers again
  }
  if (!worker->outcome.finished) return;  // interrupted: resumed later
  a2apb::Artifact artifact;
  artifact.set_artifact_id("outcome");
  artifact.set_name("outcome");
  artifact.add_parts()->set_text(worker->outcome.text);
  events.AddArtifact(artifact);
  events.UpdateStatus(worker->outcome.ok ? a2apb::TASK_STATE_COMPLETED : a2apb::TASK_STATE_FAILED,
                      worker->outcome.text);
}

void PurpleAgent::ResumeUnfinished() {
  resume_thread_ = std::thread([this] {
    for (a2apb::TaskState state : {a2apb::TASK_STATE_WORKING, a2apb::TASK_STATE_SUBMITTED}) {
      a2apb::ListTasksRequest request;
      request.set_tenant(options_.name);
      request.set_status(state);
      request.set_page_size(100);
      while (!stopping()) {
        a2apb::ListTasksResponse page;
        absl::Status s = CallWithRetry(
            [&](grpc::ClientContext* c) {
              a2a_protocol::AddVersion(c);
              return gateway_.stub()->ListTasks(c, request, &page);
            },
            options_.retry, [this] { return stopping(); });
        if (!s.ok()) {
          LOG_WARN("cannot list unfinished evaluations: %s", s.message());
          break;
        }
        for (const a2apb::Task& task : page.tasks()) {
          if (task.history_size() == 0) continue;
          const std::string text = agent_runtime::AllText(task.history(0));
          if (TaskIdOf(text).empty()) continue;
          common::LogInfo(
              {{"context_id", task.context_id()}, {"task_id", task.id()}, {"agent", options_.name}},
              "resuming the evaluation");
          std::string joined;
          for (const a2apb::Part& part : task.history(0).parts()) {
            if (!part.has_text()) continue;
            if (!joined.empty()) joined += "\n\n";
            joined += part.text();
          }
          EnsureWorker(task.context_id(), joined);
        }
        if (page.next_page_token().empty()) break;
        request.set_page_token(page.next_page_token());
      }
    }
  });
}

}  // namespace purple_agent
