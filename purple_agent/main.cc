// purple_agent: the agent under test of a root-cause-analysis evaluation
// (purple_agent/purple_agent.h) as an A2A agent behind the coordinator. At start-up it
// registers, then resumes its unfinished evaluations. Stops cleanly on SIGTERM/SIGINT.

#include "absl/flags/flag.h"
#include "agent_runtime/agent_main.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/coordinator_client.h"
#include "common/env_flags.h"
#include "common/grpc_client.h"
#include "common/grpc_log.h"
#include "common/log.h"
#include "common/mutex_mode.h"
#include "common/stop_signals.h"
#include "purple_agent/policy.h"
#include "purple_agent/purple_agent.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address to listen on; port 0 picks one");
ABSL_FLAG(std::string, name, "purple", "agent name: its tenant at the coordinator");
ABSL_FLAG(std::string, advertise_host, "127.0.0.1",
          "host the coordinator dials to reach this agent: the registered endpoint is "
          "<advertise_host>:<port> (in containers, the service's name)");
ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051", "coordinator address (host:port)");
ABSL_FLAG(std::string, green_agent, "green", "name of the green agent at the coordinator");
ABSL_FLAG(std::string, policy, "",
          "script:<file or folder> | cmd:<program> | openai:<base_url> (required)");
ABSL_FLAG(int, max_steps, 30, "actions per attempt before the attempt fails");
ABSL_FLAG(int64_t, token_budget, 200000, "tokens per evaluation, all attempts together");
ABSL_FLAG(int, max_attempts, 5, "attempts before the loop breaker stops the evaluation");
ABSL_FLAG(absl::Duration, policy_timeout, absl::Seconds(120),
          "deadline of one policy call (cmd: run or model HTTP call)");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(10), "deadline of one coordinator call");
ABSL_FLAG(std::string, model_allow_hosts, "",
          "hosts an openai: model endpoint may name: host, host:port, [v6] or [v6]:port, "
          "comma-separated; empty (the default) allows loopback only, * allows every host");

int main(int argc, char** argv) {
  common::SkipMutexDeadlockGraph();
  common::InitFlags("PURPLE_AGENT_",
                    "purple_agent: the agent under test of root-cause-analysis evaluations.\n"
                    "  purple_agent --coordinator=127.0.0.1:50051 --policy=script:examples/tasks",
                    argc, argv);
  common::RouteGrpcLogs();
  const common::StopSignals stop_signals;  // before any thread starts

  purple_agent::PolicyOptions policy_options;
  policy_options.timeout = absl::GetFlag(FLAGS_policy_timeout);
  absl::StatusOr<common::HostAllowList> model_allow =
      common::HostAllowList::Parse(absl::GetFlag(FLAGS_model_allow_hosts));
  if (!model_allow.ok()) {
    LOG_ERROR("--model_allow_hosts: %s", model_allow.status().message());
    return 2;
  }
  policy_options.model_allow = *std::move(model_allow);
  absl::StatusOr<std::unique_ptr<purple_agent::Policy>> policy =
      purple_agent::MakePolicy(absl::GetFlag(FLAGS_policy), policy_options);
  if (!policy.ok()) {
    LOG_ERROR("--policy: %s", policy.status().message());
    return 2;
  }
  purple_agent::PurpleOptions options;
  options.name = absl::GetFlag(FLAGS_name);
  options.green_agent = absl::GetFlag(FLAGS_green_agent);
  options.max_steps = std::max(1, absl::GetFlag(FLAGS_max_steps));
  options.token_budget = absl::GetFlag(FLAGS_token_budget);
  options.max_attempts = std::max(1, absl::GetFlag(FLAGS_max_attempts));
  options.retry.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  const std::string coordinator = absl::GetFlag(FLAGS_coordinator);
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      agent_runtime::CredentialsFromFlagsOrLog();
  if (!credentials.ok()) return agent_runtime::kExitBadFlags;
  purple_agent::PurpleAgent agent(
      options, agent_runtime::CoordinatorChannel(coordinator, *credentials), *std::move(policy));

  agent_runtime::RuntimeOptions runtime;
  runtime.listen = absl::GetFlag(FLAGS_listen);
  runtime.advertise_host = absl::GetFlag(FLAGS_advertise_host);
  runtime.name = options.name;
  runtime.coordinator = coordinator;
  runtime.credentials = *credentials;
  agent_runtime::SetStandardCard(
      options.name,
      "Agent under test for root-cause-analysis evaluations: takes a formatted task and works "
      "on it through the green agent's execute: tool.",
      &runtime.card);
  // After the server stops (running tasks abandoned; the coordinator delivers them again
  // later), the loops stop where they are; the conversation says where to resume.
  agent_runtime::ServeHooks hooks;
  hooks.after_start = [&agent] { agent.ResumeUnfinished(); };
  hooks.after_shutdown = [&agent] { agent.Shutdown(); };
  return agent_runtime::ServeUntilStopped(stop_signals, std::move(runtime), &agent, hooks);
}
