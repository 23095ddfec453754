#include "green_agent/green_agent.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "a2a_http/http.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/uuid.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace green_agent {
namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
using agent_runtime::EventPublisher;
using agent_runtime::RequestContext;
using common::Sha256Hex;

// The task id of a start request: "Task ID: <id>" anywhere in the text, "arvo:<number>" (the
// ARVO harness's trigger: the task is <number>), or a data part {"task_id": ...}. Empty when
// there is none.
std::string StartTaskId(const a2apb::Message& message) {
  for (const a2apb::Part& part : message.parts()) {
    if (part.has_data() && part.data().has_struct_value()) {
      const auto& fields = part.data().struct_value().fields();
      auto it = fields.find("task_id");
      if (it != fields.end() && it->second.has_string_value()) return it->second.string_value();
    }
    if (part.has_text()) {
      const size_t at = part.text().find("Task ID:");
      if (at == std::string::npos) {
        for (size_t arvo = part.text().find("arvo:"); arvo != std::string::npos;
             arvo = part.text().find("arvo:", arvo + 1)) {
          absl::string_view digits = absl::string_view(part.text()).substr(arvo + 5);
          size_t n = 0;
          while (n < digits.size() && n < 20 && absl::ascii_isdigit(digits[n])) ++n;
          if (n > 0) return std::string(digits.substr(0, n));
        }
        continue;
      }
      absl::string_view rest = absl::StripLeadingAsciiWhitespace(
          absl::string_view(part.text()).substr(at + std::strlen("Task ID:")));
      const size_t end = rest.find_first_of(" \t\r\n");
      return std::string(rest.substr(0, end));
    }
  }
  return "";
}

std::string SafeDirName(const std::string& id) {
  bool safe = !id.empty() && id.size() <= 100 && id != "." && id != "..";
  for (char c : id) {
    if (!(absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.')) safe = false;
  }
  return safe ? id : absl::StrCat("ctx-", Sha256Hex(id).substr(0, 32));
}

}  // namespace

GreenAgent::GreenAgent(GreenOptions options, std::shared_ptr<grpc::Channel> coordinator)
    : options_(std::move(options)),
      workspaces_abs_([this] {
        std::error_code ec;
        const std::filesystem::path abs = std::filesystem::absolute(options_.workspaces_dir, ec);
        return ec ? options_.workspaces_dir : abs.lexically_normal().string();
      }()),
      executor_(options_.executor),
      environments_(options_.environment, options_.executor),
      contexts_(v1::ContextService::NewStub(coordinator)),
      agents_(v1::AgentRegistry::NewStub(coordinator)),
      gateway_(coordinator, options_.retry) {}

GreenAgent::~GreenAgent() { Stop(); }

std::string GreenAgent::Clip(absl::string_view text, size_t max_bytes) {
  return std::string(text.substr(0, std::min(max_bytes, text.size())));
}

std::string GreenAgent::ContextRoot(const std::string& context_id) const {
  return (std::filesystem::path(options_.workspaces_dir) / SafeDirName(context_id)).string();
}

std::shared_ptr<absl::Mutex> GreenAgent::EnvironmentLock(const std::string& context_id) {
  return ContextLock(absl::StrCat("environment:", context_id));
}

std::shared_ptr<absl::Mutex> GreenAgent::ContextLock(const std::string& context_id) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<absl::Mutex>& m = locks_[context_id];
  if (m == nullptr) m = std::make_shared<absl::Mutex>();
  return m;
}

absl::StatusOr<v1::TaskContext> GreenAgent::GetContext(const std::string& context_id,
                                                       const std::function<bool()>& stop) {
  v1::GetContextRequest request;
  request.set_context_id(context_id);
  v1::TaskContext context;
  RETURN_IF_ERROR(agent_runtime::CallWithRetry(
      [&](grpc::ClientContext* c) { return contexts_->GetContext(c, request, &context); },
      options_.retry, stop));
  return context;
}

absl::StatusOr<v1::TaskContext> GreenAgent::UpdateContext(
    const std::string& context_id, const std::function<void(v1::TaskContext*)>& change) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    ASSIGN_OR_RETURN(v1::TaskContext context, GetContext(context_id));
    v1::UpdateContextRequest request;
    *request.mutable_context() = context;
    change(request.mutable_context());
    v1::TaskContext updated;
    absl::Status s = agent_runtime::CallWithRetry(
        [&](grpc::ClientContext* c) { return contexts_->UpdateContext(c, request, &updated); },
        options_.retry);
    if (s.ok()) return updated;
    if (!absl::IsAborted(s)) return s;  // ABORTED: someone changed it meanwhile; read again
  }
  return absl::AbortedError(absl::StrCat("context ", context_id, " keeps changing"));
}

absl::StatusOr<v1::TaskContext> GreenAgent::EndEvaluation(const std::string& context_id, bool ok,
                                                          const std::string& text) {
  return EndEvaluation(context_id, ok ? v1::CONTEXT_STATUS_COMPLETED : v1::CONTEXT_STATUS_FAILED,
                       text, {});
}

absl::StatusOr<v1::TaskContext> GreenAgent::EndEvaluation(
    const std::string& context_id, v1::ContextStatus status, const std::string& text,
    const std::vector<std::pair<std::string, std::string>>& labels) {
  return UpdateContext(context_id, [&](v1::TaskContext* c) {
    if (c->status() != v1::CONTEXT_STATUS_ACTIVE) return;  // the first ending wins
    const bool ok = status == v1::CONTEXT_STATUS_COMPLETED;
    c->set_status(status);
    (*c->mutable_labels())["phase"] = ok                                      ? "scored"
                                      : status == v1::CONTEXT_STATUS_CANCELED ? "cancelled"
                                                                              : "failed";
    (*c->mutable_labels())[ok ? "score" : "error"] = Clip(text);
    for (const auto& [key, value] : labels) {
      (*c->mutable_labels())[key] = Clip(value);
    }
  });
}

void GreenAgent::Execute(const RequestContext& request, EventPublisher& events) {
  const std::string text(absl::StripAsciiWhitespace(agent_runtime::FirstText(request.message)));
  if (absl::StartsWith(text, "execute:")) {
    const std::string command(absl::StripAsciiWhitespace(text.substr(std::strlen("execute:"))));
    return RunCommand(request, command, events);
  }
  if (text == "submit" || absl::StartsWith(text, "submit:") || absl::StartsWith(text, "submit ")) {
    return Submit(request, events);
  }
  if (absl::StartsWith(text, "abandon:")) {
    return Abandon(request, std::string(absl::StripAsciiWhitespace(text.substr(8))), events);
  }
  absl::StatusOr<std::optional<AssessmentRequest>> assessment =
      ParseAssessmentRequest(request.message, options_.purple_role);
  if (!assessment.ok()) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED, assessment.status().message());
    return;
  }
  if (assessment->has_value()) return Assess(request, **assessment, events);
  const std::string task_id = StartTaskId(request.message);
  if (!task_id.empty()) {
    return Evaluate(request, {{request.context_id, task_id}}, options_.purple_agent, events);
  }
  events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                      "unrecognized request: send \"Task ID: <id>\" (or a data part "
                      "{\"task_id\": ...}) or an assessment request ({\"participants\": "
                      "{\"<role>\": \"<agent card URL>\"}, \"config\": {\"task_ids\": [...]}}) "
                      "to start an evaluation, \"execute: <command>\" to run a command, or "
                      "\"submit\" to be scored");
}

absl::Status GreenAgent::CheckBundle(const std::string& task_id) const {
  const std::string bundle = (std::filesystem::path(options_.tasks_dir) / task_id).string();
  std::error_code ec;
  if (!IsValidTaskId(task_id) || !std::filesystem::exists(bundle + "/ground_truth.json", ec) ||
      !std::filesystem::exists(bundle + "/crash_report.txt", ec) ||
      !std::filesystem::is_directory(bundle + "/src", ec)) {
    return absl::NotFoundError(
        absl::StrCat("unknown task id \"", task_id, "\": no bundle in ", options_.tasks_dir));
  }
  return absl::OkStatus();
}

std::optional<std::string> GreenAgent::AgentOfThisCoordinator(const std::string& card_url) {
  if (options_.coordinator_address.empty()) return std::nullopt;
  a2a_http::HttpGetOptions fetch;
  fetch.timeout = options_.retry.call_timeout;
  fetch.headers = {{"A2A-Version", "1.0"}};
  absl::StatusOr<std::string> body = a2a_http::HttpGet(card_url, fetch);
  if (!body.ok()) return std::nullopt;
  a2apb::AgentCard card;
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(*body, &card, lenient).ok()) return std::nullopt;
  for (const a2apb::AgentInterface& interface : card.supported_interfaces()) {
    if (interface.protocol_binding() != "GRPC" || interface.tenant().empty() ||
        interface.url() != options_.coordinator_address) {
      continue;
    }
    v1::GetAgentRequest get;
    get.set_name(interface.tenant());
    v1::Agent agent;
    if (agent_runtime::CallWithRetry(
            [&](grpc::ClientContext* c) { return agents_->GetAgent(c, get, &agent); },
            options_.retry)
            .ok()) {
      return interface.tenant();
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::string> GreenAgent::ResolveParticipant(const AssessmentRequest& assessment) {
  // The coordinator's own URL of an agent registered there is that agent: registered again under
  // another name, each message to it would pass the coordinator twice.
  if (std::optional<std::string> own = AgentOfThisCoordinator(assessment.card_url)) return *own;
  // An agent registered with this card URL already (by an operator, or by an earlier request)
  // is the participant: reuse it rather than register the same agent twice.
  std::string page_token;
  do {
    v1::ListAgentsRequest list;
    list.set_page_size(1000);
    list.set_page_token(page_token);
    v1::ListAgentsResponse listed;
    RETURN_IF_ERROR(agent_runtime::CallWithRetry(
        [&](grpc::ClientContext* c) { return agents_->ListAgents(c, list, &listed); },
        options_.retry));
    for (const v1::Agent& agent : listed.agents()) {
      if (agent.card_url() == assessment.card_url) return agent.name();
    }
    page_token = listed.next_page_token();
  } while (!page_token.empty());

  const std::string name = ParticipantAgentName(assessment.role, assessment.card_url);
  v1::GetAgentRequest get;
  get.set_name(name);
  v1::Agent existing;
  absl::Status got = agent_runtime::CallWithRetry(
      [&](grpc::ClientContext* c) { return agents_->GetAgent(c, get, &existing); }, options_.retry);
  if (got.ok()) {
    if (existing.card_url() == assessment.card_url) return name;  // registered meanwhile
    return absl::FailedPreconditionError(
        absl::StrCat("the agent name ", name, " is taken by another agent (",
                     existing.card_url().empty() ? existing.endpoint() : existing.card_url(), ")"));
  }
  if (!absl::IsNotFound(got)) return got;
  v1::RegisterAgentRequest registration;
  registration.mutable_agent()->set_name(name);
  registration.mutable_agent()->set_card_url(assessment.card_url);
  // The coordinator fetches the card while it answers, so UNAVAILABLE means the coordinator or
  // the participant is not up yet (platforms start them together): either is waited for, as
  // long as --participant_wait.
  agent_runtime::RetryOptions retry = options_.retry;
  retry.retry_for = options_.participant_wait;
  v1::Agent registered;
  absl::Status s = agent_runtime::CallWithRetry(
      [&](grpc::ClientContext* c) { return agents_->RegisterAgent(c, registration, &registered); },
      retry);
  RETURN_IF_ERROR(s);
  return name;
}

void GreenAgent::Assess(const RequestContext& request, const AssessmentRequest& assessment,
                        EventPublisher& events) {
  // Every task id must name a bundle before anything is registered.
  for (const std::string& task_id : assessment.task_ids) {
    if (absl::Status s = CheckBundle(task_id); !s.ok()) {
      events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                          absl::StrCat("assessment request: ", s.message()));
      return;
    }
  }
  absl::StatusOr<std::string> purple = ResolveParticipant(assessment);
  if (!purple.ok()) {
    events.UpdateStatus(
        a2apb::TASK_STATE_FAILED,
        absl::StrCat("cannot register the participant \"", assessment.role, "\" (",
                     assessment.card_url, ") with the coordinator: ", purple.status().message()));
    return;
  }
  common::LogInfo(
      {{"context_id", request.context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
      "assessment of %s (role %s, card %s) on %d task(s)", *purple, assessment.role,
      assessment.card_url, assessment.task_ids.size());
  std::vector<Evaluation> evaluations;
  for (const std::string& task_id : assessment.task_ids) {
    // One task keeps the request's context, as "Task ID:" does; several get one context each.
    evaluations.push_back({assessment.task_ids.size() == 1
                               ? request.context_id
                               : absl::StrCat(request.context_id, "/", task_id),
                           task_id});
  }
  Evaluate(request, evaluations, *purple, events);
}

void GreenAgent::Evaluate(const RequestContext& request, const std::vector<Evaluation>& evaluations,
                          const std::string& purple, EventPublisher& events) {
  for (const Evaluation& evaluation : evaluations) {
    if (absl::Status s = CheckBundle(evaluation.task_id); !s.ok()) {
      events.UpdateStatus(a2apb::TASK_STATE_REJECTED, s.message());
      return;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    evaluating_.insert(request.task_id);
  }
  struct Done {
    GreenAgent* agent;
    const std::string& task_id;
    ~Done() {
      absl::MutexLock lock(&agent->mu_);
      agent->evaluating_.erase(task_id);
      agent->cancelled_.erase(task_id);
    }
  } done{this, request.task_id};
  std::vector<std::string> task_ids;
  bool all_ended = true;
  std::vector<v1::TaskContext> contexts;
  for (const Evaluation& evaluation : evaluations) {
    absl::StatusOr<v1::TaskContext> context = Begin(request, evaluation, purple);
    if (!context.ok()) {
      events.UpdateStatus(absl::IsFailedPrecondition(context.status()) ? a2apb::TASK_STATE_REJECTED
                                                                       : a2apb::TASK_STATE_FAILED,
                          context.status().message());
      return;
    }
    if (context->status() != v1::CONTEXT_STATUS_ACTIVE) {
      ReleaseEnvironment(evaluation.context_id, &*context);
    }
    all_ended = all_ended && context->status() != v1::CONTEXT_STATUS_ACTIVE;
    contexts.push_back(*std::move(context));
    task_ids.push_back(evaluation.task_id);
    if (events.cancelled()) break;  // the rest is not started
  }
  if (!events.cancelled()) {
    if (all_ended) return PublishOutcomes(contexts, events);
    events.UpdateStatus(a2apb::TASK_STATE_WORKING,
                        absl::StrCat("evaluating ", absl::StrJoin(task_ids, ", "), " with ", purple,
                                     "; waiting for its submission"));
  }
  auto cancelled = [&events] { return events.cancelled(); };
  while (!events.cancelled()) {
    all_ended = true;
    for (size_t i = 0; i < evaluations.size() && all_ended; ++i) {
      if (contexts[i].status() != v1::CONTEXT_STATUS_ACTIVE) continue;
      absl::StatusOr<v1::TaskContext> context = GetContext(evaluations[i].context_id, cancelled);
      if (absl::IsNotFound(context.status())) {
        ReleaseEnvironment(evaluations[i].context_id, nullptr);
        events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                            absl::StrCat("context ", evaluations[i].context_id, " was deleted"));
        return;
      }
      if (context.ok()) contexts[i] = *std::move(context);
      all_ended = contexts[i].status() != v1::CONTEXT_STATUS_ACTIVE;
      // Ended by someone else (a person, a harness): its environment goes now.
      if (all_ended) ReleaseEnvironment(evaluations[i].context_id, &contexts[i]);
    }
    if (all_ended) return PublishOutcomes(contexts, events);
    events.WaitCancelled(options_.poll_interval);
  }
  // Cancelled by a client: the evaluations end. Otherwise the runtime is stopping or the caller
  // went away: they go on, and the coordinator delivers this request again.
  if (CancelRequested(request.task_id)) {
    CancelEvaluations(request, std::vector<Evaluation>(
                                   evaluations.begin(),
                                   evaluations.begin() + static_cast<ptrdiff_t>(contexts.size())));
  }
}

void GreenAgent::Cancel(const RequestContext& request) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_ || !evaluating_.contains(request.task_id)) return;
  cancelled_.insert(request.task_id);
}

bool GreenAgent::CancelRequested(const std::string& task_id) {
  absl::MutexLock lock(&mu_);
  auto decided = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutting_down_ || cancelled_.contains(task_id);
  };
  mu_.AwaitWithTimeout(absl::Condition(&decided), absl::Seconds(1));
  return !shutting_down_ && cancelled_.erase(task_id) > 0;
}

void GreenAgent::CancelEvaluations(const RequestContext& request,
                                   const std::vector<Evaluation>& evaluations) {
  for (const Evaluation& evaluation : evaluations) {
    // Without the context's lock: a command may be running in the environment, and stopping the
    // environment is what ends it.
    const std::string& context_id = evaluation.context_id;
    absl::StatusOr<v1::TaskContext> context =
        EndEvaluation(context_id, v1::CONTEXT_STATUS_CANCELED,
                      absl::StrCat("cancelled: the request that started it (task ", request.task_id,
                                   ") was cancelled"),
                      {});
    if (!context.ok()) {
      common::LogError(
          {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
          "cannot end the cancelled evaluation: %s", context.status().message());
      continue;  // the sweep stops its environment once it has ended
    }
    common::LogInfo(
        {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
        "evaluation of %s ended %s", evaluation.task_id, v1::ContextStatus_Name(context->status()));
    ReleaseEnvironment(context_id, &*context);
  }
}

void GreenAgent::Start() {
  if (!environments_.enabled()) return;
  absl::MutexLock lock(&mu_);
  if (sweeper_.joinable() || sweep_stop_) return;
  sweeper_ = std::thread([this] {
    while (true) {
      Sweep();
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&sweep_stop_),
                               options_.environment.sweep_interval)) {
        return;
      }
    }
  });
}

void GreenAgent::PrepareShutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
}

void GreenAgent::Stop() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    sweep_stop_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
}

absl::StatusOr<v1::TaskContext> GreenAgent::Begin(const RequestContext& request,
                                                  const Evaluation& evaluation,
                                                  const std::string& purple) {
  const std::string& context_id = evaluation.context_id;
  const std::string& task_id = evaluation.task_id;
  const std::string bundle = (std::filesystem::path(options_.tasks_dir) / task_id).string();
  const bool arvo = options_.layout == "arvo";
  const WorkspaceLayout layout = arvo ? WorkspaceLayout::Arvo(task_id) : WorkspaceLayout::Default();
  // The ARVO harness's directory names: one workspace per task and agent under test.
  const std::string root = arvo ? (std::filesystem::path(options_.workspaces_dir) /
                                   SafeDirName(absl::StrCat("arvo_", task_id, "-", purple)))
                                      .string()
                                : ContextRoot(context_id);
  const std::string workspace = root + "/workspace";
  const std::string shared = workspace + "/shared";
  std::shared_ptr<absl::Mutex> mu = ContextLock(context_id);
  absl::MutexLock lock(mu.get());
  // Two contexts share an ARVO workspace: its preparation is serialized on the directory too.
  std::shared_ptr<absl::Mutex> workspace_mu =
      arvo ? ContextLock(absl::StrCat("workspace:", root)) : nullptr;
  std::optional<absl::MutexLock> workspace_lock;
  if (workspace_mu != nullptr) workspace_lock.emplace(workspace_mu.get());
  absl::StatusOr<v1::TaskContext> context = GetContext(context_id);
  if (!context.ok() && !absl::IsNotFound(context.status())) {
    return absl::UnavailableError(absl::StrCat("coordinator: ", context.status().message()));
  }
  if (context.ok()) {
    if (context->external_task_id() != task_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "context ", context_id, " already evaluates task ", context->external_task_id()));
    }
    if (context->status() != v1::CONTEXT_STATUS_ACTIVE) return context;
  }
  if (arvo && !context.ok()) RETURN_IF_ERROR(ClaimArvoWorkspace(root, context_id));
  RETURN_IF_ERROR(PrepareWorkspace(bundle, workspace, shared, layout));
  if (!context.ok()) {
    context = CreateEvaluationContext(request, evaluation, purple, workspace, shared);
    if (!context.ok()) return context.status();
  }
  if (environments_.enabled() && context->environment_handle().empty() &&
      context->status() == v1::CONTEXT_STATUS_ACTIVE) {
    context = StartEnvironment(request, *std::move(context));
    if (!context.ok()) return context.status();
    if (context->status() != v1::CONTEXT_STATUS_ACTIVE) return context;  // it did not start
  }
  if (context->labels().count("purple_task") == 0) {
    return SendTaskToPurple(request, evaluation, purple, layout);
  }
  return context;
}

absl::Status GreenAgent::ClaimArvoWorkspace(const std::string& root,
                                            const std::string& context_id) {
  // The harness's names give one workspace per task and agent under test, so it serves one
  // evaluation at a time; a new one starts from a fresh copy (no answer left from the last).
  const std::string owner_file = root + "/.context_id";
  absl::StatusOr<std::string> owner = ReadFile(owner_file);
  if (owner.ok() && *owner != context_id) {
    absl::StatusOr<v1::TaskContext> other = GetContext(*owner);
    if (other.ok() && other->status() == v1::CONTEXT_STATUS_ACTIVE) {
      return absl::FailedPreconditionError(
          absl::StrCat("workspace ", root, " is in use by the evaluation in context ", *owner,
                       " (--layout=arvo keeps one workspace per task and agent under test)"));
    }
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  return WriteFileAtomically(owner_file, context_id);
}

absl::StatusOr<v1::TaskContext> GreenAgent::CreateEvaluationContext(const RequestContext& request,
                                                                    const Evaluation& evaluation,
                                                                    const std::string& purple,
                                                                    const std::string& workspace,
                                                                    const std::string& shared) {
  const std::string& context_id = evaluation.context_id;
  const std::string& task_id = evaluation.task_id;
  const bool arvo = options_.layout == "arvo";
  v1::CreateContextRequest create;
  v1::TaskContext* c = create.mutable_context();
  c->set_context_id(context_id);
  c->set_agent(options_.name);
  c->set_external_task_id(task_id);
  c->set_workspace_dir(workspace);
  c->set_shared_dir(shared);
  (*c->mutable_labels())["phase"] = "started";
  (*c->mutable_labels())["purple_agent"] = purple;
  if (arvo) (*c->mutable_labels())["arvo_id"] = task_id;
  if (environments_.enabled()) (*c->mutable_labels())["environment"] = "starting";
  // The agent under test writes this context's conversation (docs/security.md).
  c->add_parties(purple);
  v1::TaskContext created;
  absl::Status s = agent_runtime::CallWithRetry(
      [&](grpc::ClientContext* cc) { return contexts_->CreateContext(cc, create, &created); },
      options_.retry);
  if (!s.ok() && !absl::IsAlreadyExists(s)) {
    return absl::UnavailableError(absl::StrCat("coordinator: ", s.message()));
  }
  absl::StatusOr<v1::TaskContext> context = GetContext(context_id);
  if (!context.ok()) {
    return absl::UnavailableError(absl::StrCat("coordinator: ", context.status().message()));
  }
  common::LogInfo(
      {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
      "evaluation of %s created in %s", task_id, workspace);
  return context;
}

absl::StatusOr<v1::TaskContext> GreenAgent::SendTaskToPurple(const RequestContext& request,
                                                             const Evaluation& evaluation,
                                                             const std::string& purple,
                                                             const WorkspaceLayout& layout) {
  const std::string& context_id = evaluation.context_id;
  const std::string& task_id = evaluation.task_id;
  const std::string bundle = (std::filesystem::path(options_.tasks_dir) / task_id).string();
  ASSIGN_OR_RETURN(const std::string report, ReadFile(bundle + "/crash_report.txt"));
  TaskLimits limits;
  limits.timeout_seconds = static_cast<int>(absl::ToInt64Seconds(options_.executor.timeout));
  limits.output_cap = options_.executor.output_cap;
  a2apb::Message message;
  message.set_role(a2apb::ROLE_USER);
  message.set_context_id(context_id);
  for (const std::string& part : FormatTask(task_id, report, limits, layout)) {
    message.add_parts()->set_text(part);
  }
  (*message.mutable_metadata()->mutable_fields())["task_id"].set_string_value(task_id);
  absl::StatusOr<a2apb::Task> sent = gateway_.Send(purple, message);
  if (!sent.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot send the task to ", purple, ": ", sent.status().message()));
  }
  const std::string purple_task = sent->id();
  absl::StatusOr<v1::TaskContext> context = UpdateContext(context_id, [&](v1::TaskContext* c) {
    (*c->mutable_labels())["purple_task"] = purple_task;
    (*c->mutable_labels())["phase"] = "running";
  });
  if (!context.ok()) {
    return absl::UnavailableError(absl::StrCat("coordinator: ", context.status().message()));
  }
  common::LogInfo(
      {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
      "task sent to %s (its task %s)", purple, purple_task);
  return context;
}

void GreenAgent::PublishOutcome(const v1::TaskContext& context, EventPublisher& events) {
  auto label = [&](const std::string& key) {
    auto it = context.labels().find(key);
    return it == context.labels().end() ? std::string() : it->second;
  };
  if (context.status() == v1::CONTEXT_STATUS_COMPLETED) {
    const std::string score = label("score");
    a2apb::Artifact artifact;
    artifact.set_artifact_id("score");
    artifact.set_name("score");
    artifact.set_description("root-cause localization score against the ground truth");
    a2apb::Part* part = artifact.add_parts();
    part->set_media_type("application/json");
    if (!google::protobuf::util::JsonStringToMessage(score, part->mutable_data()).ok()) {
      part->set_text(score);
    }
    events.AddArtifact(artifact);
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, score);
    return;
  }
  const std::string error = label("error");
  events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                      error.empty() ? absl::StrCat("the evaluation ended ",
                                                   v1::ContextStatus_Name(context.status()))
                                    : error);
}

void GreenAgent::PublishOutcomes(const std::vector<v1::TaskContext>& contexts,
                                 EventPublisher& events) {
  if (contexts.size() == 1) return PublishOutcome(contexts.front(), events);
  double total = 0;
  std::vector<std::string> results;  // one JSON object per task
  std::vector<std::string> failures;
  for (const v1::TaskContext& context : contexts) {
    auto label = [&](const std::string& key) {
      auto it = context.labels().find(key);
      return it == context.labels().end() ? std::string() : it->second;
    };
    google::protobuf::Struct score;
    if (context.status() == v1::CONTEXT_STATUS_COMPLETED &&
        google::protobuf::util::JsonStringToMessage(label("score"), &score).ok()) {
      total += score.fields().count("score") ? score.fields().at("score").number_value() : 0;
      results.push_back(label("score"));
      a2apb::Artifact artifact;
      artifact.set_artifact_id(absl::StrCat("score-", context.external_task_id()));
      artifact.set_name(artifact.artifact_id());
      artifact.set_description(absl::StrCat("score of ", context.external_task_id()));
      a2apb::Part* part = artifact.add_parts();
      part->set_media_type("application/json");
      *part->mutable_data()->mutable_struct_value() = score;
      events.AddArtifact(artifact);
      continue;
    }
    std::string error = label("error");
    if (error.empty()) {
      error = absl::StrCat("the evaluation ended ", v1::ContextStatus_Name(context.status()));
    }
    google::protobuf::Struct failed;
    (*failed.mutable_fields())["task_id"].set_string_value(context.external_task_id());
    (*failed.mutable_fields())["error"].set_string_value(error);
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(failed, &json);
    results.push_back(json);
    failures.push_back(absl::StrCat(context.external_task_id(), ": ", error));
  }
  const std::string summary =
      absl::StrFormat("{\"score\":%.4f,\"tasks\":[%s]}",
                      total / static_cast<double>(contexts.size()), absl::StrJoin(results, ","));
  a2apb::Artifact artifact;
  artifact.set_artifact_id("score");
  artifact.set_name("score");
  artifact.set_description(
      "mean root-cause localization score over the assessment's tasks (a failed one counts 0)");
  a2apb::Part* part = artifact.add_parts();
  part->set_media_type("application/json");
  if (!google::protobuf::util::JsonStringToMessage(summary, part->mutable_data()).ok()) {
    part->set_text(summary);
  }
  events.AddArtifact(artifact);
  if (failures.empty()) {
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, summary);
    return;
  }
  events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                      absl::StrCat(failures.size(), " of ", contexts.size(),
                                   " evaluations failed: ", absl::StrJoin(failures, "; ")));
}

void GreenAgent::Submit(const RequestContext& request, EventPublisher& events) {
  const std::string& context_id = request.context_id;
  std::shared_ptr<absl::Mutex> mu = ContextLock(context_id);
  absl::MutexLock lock(mu.get());
  absl::StatusOr<v1::TaskContext> context = GetContext(context_id);
  if (absl::IsNotFound(context.status())) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                        absl::StrCat("unknown context ", context_id, ": nothing to score"));
    return;
  }
  if (!context.ok()) {
    events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                        absl::StrCat("coordinator: ", context.status().message()));
    return;
  }
  if (context->status() == v1::CONTEXT_STATUS_ACTIVE) {
    bool ok = false;
    std::string text;
    absl::StatusOr<std::string> loc = ReadFile(context->shared_dir() + "/loc.json");
    absl::StatusOr<std::string> truth_json =
        ReadFile((std::filesystem::path(options_.tasks_dir) / context->external_task_id() /
                  "ground_truth.json")
                     .string());
    if (!loc.ok()) {
      text = "no loc.json in the shared dir: write shared/loc.json before submitting";
    } else if (!truth_json.ok()) {
      text = absl::StrCat("the ground truth of ", context->external_task_id(), " cannot be read");
    } else {
      absl::StatusOr<std::vector<Location>> submitted = ParseLocations(*loc);
      absl::StatusOr<std::vector<Location>> truth = ParseLocations(*truth_json);
      if (!submitted.ok()) {
        text = absl::StrCat("malformed loc.json: ", submitted.status().message());
      } else if (!truth.ok()) {
        text = absl::StrCat("malformed ground truth: ", truth.status().message());
      } else {
        ok = true;
        text = ScoreJson(context->external_task_id(), ScoreLocations(*truth, *submitted));
      }
    }
    context = EndEvaluation(context_id, ok, text);
    if (!context.ok()) {
      events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                          absl::StrCat("coordinator: ", context.status().message()));
      return;
    }
    common::LogInfo(
        {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
        "%s %s", ok ? "scored" : "failed", text);
  }
  ReleaseEnvironment(context_id, &*context);
  PublishOutcome(*context, events);
}

void GreenAgent::Abandon(const RequestContext& request, const std::string& reason,
                         EventPublisher& events) {
  const std::string& context_id = request.context_id;
  std::shared_ptr<absl::Mutex> mu = ContextLock(context_id);
  absl::MutexLock lock(mu.get());
  absl::StatusOr<v1::TaskContext> context = GetContext(context_id);
  if (absl::IsNotFound(context.status())) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED, absl::StrCat("unknown context ", context_id));
    return;
  }
  if (context.ok() && context->status() == v1::CONTEXT_STATUS_ACTIVE) {
    context =
        EndEvaluation(context_id, false, absl::StrCat("the agent under test gave up: ", reason));
  }
  if (!context.ok()) {
    events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                        absl::StrCat("coordinator: ", context.status().message()));
    return;
  }
  ReleaseEnvironment(context_id, &*context);
  events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, "recorded");
}

}  // namespace green_agent
