// The purple agent: the agent under test in a root-cause-analysis evaluation. For each
// formatted task it runs a loop in the evaluation's context: ask the policy for the next
// action, append it to the conversation, send "execute: ..." to the green agent through the
// coordinator, append the observation; until it submits. Attempts that fail (policy error,
// step limit without a submission, a command repeated with the same failure) are recorded in
// the coordinator's retry state, escalate the model tier, and go through the loop breaker.
//
// Nothing that matters lives in memory. The conversation in the coordinator is the loop's
// state: it is read back after a restart and the loop continues at the stored step. Markers in
// it (SYSTEM messages "attempt N: ...", "attempt N failed: ...", "final: ...") record each
// decision before it is acted on, and everything after a marker is idempotent. An action
// whose observation was not stored when the agent died is sent again with the same exec_seq;
// the green agent answers a repeated exec_seq from its record instead of running the command
// twice.
#ifndef PURPLE_AGENT_PURPLE_AGENT_H_
#define PURPLE_AGENT_PURPLE_AGENT_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/coordinator_client.h"
#include "coordinator/v1/breaker.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "purple_agent/policy.h"

namespace purple_agent {

struct PurpleOptions {
  // This agent's name at the coordinator (default "purple").
  std::string name = "purple";
  // The green agent's name at the coordinator (default "green").
  std::string green_agent = "green";
  // Actions per attempt (default 30).
  int max_steps = 30;
  // Tokens per evaluation, all attempts together (default 200000).
  int64_t token_budget = 200000;
  // Attempts before the breaker is asked to stop the task (default 5).
  int max_attempts = 5;
  // How long to wait for the green agent to answer one request (default 10 minutes).
  absl::Duration green_timeout = absl::Minutes(10);
  agent_runtime::RetryOptions retry;
};

// How an evaluation ended, as the purple agent's task reports it.
struct Outcome {
  bool finished = false;  // false: interrupted (shutting down); the task will be resumed
  bool ok = false;
  std::string text;
};

class PurpleAgent : public agent_runtime::AgentExecutor {
 public:
  PurpleAgent(PurpleOptions options, std::shared_ptr<grpc::Channel> coordinator,
              std::unique_ptr<Policy> policy);
  ~PurpleAgent() override;

  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override;

  // Finds this agent's unfinished evaluations in the coordinator (its tasks that are SUBMITTED
  // or WORKING) and resumes each at its stored step. Runs in the background; retries while
  // the coordinator is unreachable.
  void ResumeUnfinished();

  // Stops the loops (they can be resumed later) and waits for them.
  void Shutdown();

 private:
  struct Worker {
    std::thread thread;
    absl::Notification done;
    Outcome outcome;
  };
  class Loop;

  // The running (or finished) loop of a context, started when there is none.
  std::shared_ptr<Worker> EnsureWorker(const std::string& context_id, const std::string& task);
  bool stopping() const;

  const PurpleOptions options_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<coordinator::v1::ConversationService::Stub> conversations_;
  std::unique_ptr<coordinator::v1::TaskStateService::Stub> task_state_;
  std::unique_ptr<coordinator::v1::BreakerService::Stub> breaker_;
  agent_runtime::GatewayClient gateway_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, std::shared_ptr<Worker>> workers_ ABSL_GUARDED_BY(mu_);
  std::thread resume_thread_;
};

}  // namespace purple_agent

#endif  // PURPLE_AGENT_PURPLE_AGENT_H_
