// The green agent: hosts root-cause-analysis evaluations for an agent under test. It keeps no
// state that matters in memory: an evaluation is its TaskContext in the coordinator (keyed by
// the A2A context_id) plus its workspace on disk, so any request can be answered again after a
// restart. Requests (the first text part, or a data part):
//   "Task ID: <id>" or {"task_id": "<id>"}   start an evaluation; the task ends with the score
//   {"participants": {...}, "config": {...}}  an assessment request (green_agent/assessment.h):
//                                            register the participant playing --purple_role by
//                                            its card URL, then evaluate it on config's tasks
//   "execute: <command>"                     run a command in the context's workspace
//   "submit"                                 score shared/loc.json against the ground truth
//   "abandon: <reason>"                      the agent under test gave up; the evaluation fails
// execute: is idempotent per (context, exec_seq) when the sender puts "exec_seq" in the
// message metadata: a command is run and recorded (RecordCommand) once, and a repeat of the
// same exec_seq gets the stored result, so command_count never double counts.
// With --env_start_template each evaluation gets its own environment (a container; see
// green_agent/environment.h): started before the task is sent, its handle stored as the
// context's environment_handle, stopped when the evaluation ends however it ends. A request to
// start an evaluation that is cancelled (A2A CancelTask) ends its evaluations CANCELED.
#ifndef GREEN_AGENT_GREEN_AGENT_H_
#define GREEN_AGENT_GREEN_AGENT_H_

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/coordinator_client.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "green_agent/assessment.h"
#include "green_agent/environment.h"
#include "green_agent/evaluation.h"
#include "green_agent/executor.h"

namespace green_agent {

struct GreenOptions {
  // This agent's name at the coordinator (default "green").
  std::string name = "green";
  // The agent under test's name at the coordinator (default "purple"), for "Task ID:" requests.
  std::string purple_agent = "purple";
  // The role in an assessment request's "participants" that names the agent under test
  // (default "purple").
  std::string purple_role = "purple";
  // Folder of task bundles (one folder per task id).
  std::string tasks_dir;
  // Where per-context workspaces are created (default ./workspaces).
  std::string workspaces_dir = "./workspaces";
  // How a workspace is laid out: "default" (<workspaces_dir>/<context>/workspace with src/ and
  // crash_report.txt) or "arvo", as the ARVO evaluation harness did
  // (<workspaces_dir>/arvo_<task>-<agent under test>/workspace with src-vul/ and
  // <task>_error.txt).
  std::string layout = "default";
  ExecutorOptions executor;
  // A per-evaluation environment (off when start_template is empty).
  EnvironmentOptions environment;
  // Deadlines and retry budget of coordinator calls.
  agent_runtime::RetryOptions retry;
  // The coordinator's address as this agent dials it (--coordinator). A participant URL whose
  // card is that coordinator's card of an agent registered there is that agent (see
  // AgentOfThisCoordinator); empty: never so.
  std::string coordinator_address;
  // How long to keep trying to register an assessment's participant while the coordinator
  // cannot fetch its card (UNAVAILABLE: the participant may still be starting; default 30s).
  absl::Duration participant_wait = absl::Seconds(30);
  // How often an evaluation's task looks at its context while it waits for the score
  // (default 200ms).
  absl::Duration poll_interval = absl::Milliseconds(200);
};

class GreenAgent : public agent_runtime::AgentExecutor {
 public:
  GreenAgent(GreenOptions options, std::shared_ptr<grpc::Channel> coordinator);
  ~GreenAgent() override;

  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override;
  // A client cancelled a request (A2A CancelTask): the evaluations it started end CANCELED.
  // Ignored once PrepareShutdown was called (the runtime then abandons its executions, which
  // the coordinator delivers again later).
  void Cancel(const agent_runtime::RequestContext& request) override;

  // Starts the sweep of per-evaluation environments (when configured): once now, then every
  // --env_sweep_interval.
  void Start();
  // Before the server shuts down: cancellations from now on are the runtime's, not a client's.
  void PrepareShutdown();
  // Stops the sweep. Idempotent.
  void Stop();

 private:
  // Longest label value green writes (an error, a score's text).
  static constexpr size_t kMaxLabelBytes = 4000;
  // `text` cut to `max_bytes`.
  static std::string Clip(absl::string_view text, size_t max_bytes = kMaxLabelBytes);

  // One evaluation: a task bundle evaluated in one context (the TaskContext's id).
  struct Evaluation {
    std::string context_id;
    std::string task_id;
  };

  // Registers the assessment's participant (or finds it registered), then Evaluate.
  void Assess(const agent_runtime::RequestContext& request, const AssessmentRequest& assessment,
              agent_runtime::EventPublisher& events);
  // Starts (or resumes) each evaluation with `purple` as the agent under test, waits until all
  // of them have ended and publishes the outcome.
  void Evaluate(const agent_runtime::RequestContext& request,
                const std::vector<Evaluation>& evaluations, const std::string& purple,
                agent_runtime::EventPublisher& events);
  // Creates the context and the workspace and sends the task to `purple`, each only if not
  // done before. FAILED_PRECONDITION when the context evaluates another task.
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> Begin(
      const agent_runtime::RequestContext& request, const Evaluation& evaluation,
      const std::string& purple);
  // --layout=arvo: the workspace `root` becomes the evaluation's in `context_id` (fresh when
  // another, ended evaluation had it); FAILED_PRECONDITION while an active one has it.
  [[nodiscard]] absl::Status ClaimArvoWorkspace(const std::string& root,
                                                const std::string& context_id);
  // Creates the evaluation's context (an existing one is read back).
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> CreateEvaluationContext(
      const agent_runtime::RequestContext& request, const Evaluation& evaluation,
      const std::string& purple, const std::string& workspace, const std::string& shared);
  // Sends `purple` the formatted task and records its task in the context's labels.
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> SendTaskToPurple(
      const agent_runtime::RequestContext& request, const Evaluation& evaluation,
      const std::string& purple, const WorkspaceLayout& layout);
  // NOT_FOUND unless `task_id` names a complete bundle under --tasks_dir.
  [[nodiscard]] absl::Status CheckBundle(const std::string& task_id) const;
  // The participant's name at the coordinator: an agent already registered with the same card
  // URL, else ParticipantAgentName(role, card_url), registered now by its card URL.
  [[nodiscard]] absl::StatusOr<std::string> ResolveParticipant(const AssessmentRequest& assessment);
  // The agent registered at this coordinator whose card `card_url` is, when the card there is
  // the coordinator's own card of it (coordctl scenario run hands the green agent the
  // coordinator's URL of each participant): a GRPC interface at options_.coordinator_address
  // whose tenant is a registered agent. nullopt for any other card or one not read.
  std::optional<std::string> AgentOfThisCoordinator(const std::string& card_url);
  void RunCommand(const agent_runtime::RequestContext& request, const std::string& command,
                  agent_runtime::EventPublisher& events);
  // The context of an evaluation under way; nullopt once `events` says why there is none.
  std::optional<coordinator::v1::TaskContext> ActiveContext(const std::string& context_id,
                                                            agent_runtime::EventPublisher& events);
  // The result of exec `seq` of the evaluation: kept from an earlier run of the same exec (a
  // retried message), else the command run now and kept; nullopt once `events` says why not
  // (no environment yet, or the environment stopped working, which ends the evaluation).
  std::optional<ExecResult> ExecuteOnce(const agent_runtime::RequestContext& request,
                                        const std::string& command,
                                        const coordinator::v1::TaskContext& context, int64_t seq,
                                        agent_runtime::EventPublisher& events);
  // RecordCommand of `result`, retried with one request_id (counted once).
  absl::Status RecordExecution(const std::string& context_id, const std::string& command,
                               const ExecResult& result);
  void Submit(const agent_runtime::RequestContext& request, agent_runtime::EventPublisher& events);
  void Abandon(const agent_runtime::RequestContext& request, const std::string& reason,
               agent_runtime::EventPublisher& events);

  // Publishes the outcome of an evaluation that has ended (score or failure).
  void PublishOutcome(const coordinator::v1::TaskContext& context,
                      agent_runtime::EventPublisher& events);
  // The same for several evaluations: a score artifact per task, a summary artifact "score"
  // (the mean, a failed evaluation counting 0), COMPLETED when every one was scored.
  void PublishOutcomes(const std::vector<coordinator::v1::TaskContext>& contexts,
                       agent_runtime::EventPublisher& events);

  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> GetContext(
      const std::string& context_id, const std::function<bool()>& stop = nullptr);
  // Read-modify-write of a context (retried on a version conflict).
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> UpdateContext(
      const std::string& context_id,
      const std::function<void(coordinator::v1::TaskContext*)>& change);
  // Ends the evaluation: status FAILED (with `error`) or COMPLETED (with the score).
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> EndEvaluation(
      const std::string& context_id, bool ok, const std::string& text);
  // The same with any final status; `labels` are set too. Changes nothing when it has ended.
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> EndEvaluation(
      const std::string& context_id, coordinator::v1::ContextStatus status, const std::string& text,
      const std::vector<std::pair<std::string, std::string>>& labels);

  // ---- The environment lifecycle (green_agent_environment.cc). ----

  // Where the context's commands and templates run.
  ExecEnv EnvFor(const coordinator::v1::TaskContext& context) const;
  // Starts the context's environment (the caller holds the context's lock): the context with
  // the handle stored, or ended FAILED when the start failed. Errors are the coordinator's.
  [[nodiscard]] absl::StatusOr<coordinator::v1::TaskContext> StartEnvironment(
      const agent_runtime::RequestContext& request, coordinator::v1::TaskContext context);
  // Stops the context's environment when green recorded one: removes the record when the stop
  // template succeeded, keeps it for the sweep when it failed. `known` is the context as last
  // read (nullptr when it is gone). Takes the environment's lock, not the context's (a command
  // may be running: stopping the environment ends it); does nothing when there is no record.
  void ReleaseEnvironment(const std::string& context_id, const coordinator::v1::TaskContext* known);
  // The same with the environment's lock held.
  void ReleaseEnvironmentLocked(const std::string& context_id,
                                const coordinator::v1::TaskContext* known);
  // Stops the environments of records whose evaluation ended or whose context is gone.
  void Sweep();
  // True when `task_id` was cancelled by a client; waits a moment for Cancel, which the runtime
  // calls just after the execution learned it was cancelled.
  bool CancelRequested(const std::string& task_id);
  // Ends the still-active evaluations of a cancelled request CANCELED and stops their
  // environments.
  void CancelEvaluations(const agent_runtime::RequestContext& request,
                         const std::vector<Evaluation>& evaluations);

  // Root of one context's files: workspace/, results/.
  std::string ContextRoot(const std::string& context_id) const;
  // Serializes requests of one context within this process (execute: races with a resend).
  std::shared_ptr<absl::Mutex> ContextLock(const std::string& context_id);
  // Serializes the start and stops of one context's environment; taken after the context's
  // lock when both are held.
  std::shared_ptr<absl::Mutex> EnvironmentLock(const std::string& context_id);

  const GreenOptions options_;
  // options_.workspaces_dir made absolute ({env_name} is derived from it).
  const std::string workspaces_abs_;
  CommandExecutor executor_;
  EnvironmentRunner environments_;
  std::unique_ptr<coordinator::v1::ContextService::Stub> contexts_;
  std::unique_ptr<coordinator::v1::AgentRegistry::Stub> agents_;
  agent_runtime::GatewayClient gateway_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<absl::Mutex>> locks_ ABSL_GUARDED_BY(mu_);
  // Requests running Evaluate, by task id.
  absl::flat_hash_set<std::string> evaluating_ ABSL_GUARDED_BY(mu_);
  // Those of them a client cancelled.
  absl::flat_hash_set<std::string> cancelled_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool sweep_stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;
};

}  // namespace green_agent

#endif  // GREEN_AGENT_GREEN_AGENT_H_
