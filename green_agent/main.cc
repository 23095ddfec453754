// green_agent: hosts root-cause-analysis evaluations (green_agent/green_agent.h) as an A2A
// agent behind the coordinator. Registers at start-up; stops cleanly on SIGTERM/SIGINT.

#include <iostream>

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
#include "green_agent/green_agent.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address to listen on; port 0 picks one");
ABSL_FLAG(std::string, name, "green", "agent name: its tenant at the coordinator");
ABSL_FLAG(std::string, advertise_host, "127.0.0.1",
          "host the coordinator dials to reach this agent: the registered endpoint is "
          "<advertise_host>:<port> (in containers, the service's name)");
ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051", "coordinator address (host:port)");
ABSL_FLAG(std::string, purple_agent, "purple",
          "name of the agent under test at the coordinator (\"Task ID:\" requests)");
ABSL_FLAG(std::string, purple_role, "purple",
          "role in an assessment request's participants that names the agent under test");
ABSL_FLAG(absl::Duration, participant_wait, absl::Seconds(30),
          "how long to keep trying to register an assessment's participant whose card cannot be "
          "fetched yet (it may still be starting)");
ABSL_FLAG(std::string, tasks_dir, "examples/tasks", "folder of task bundles, one per task id");
ABSL_FLAG(std::string, workspaces_dir, "./workspaces", "where per-context workspaces are made");
ABSL_FLAG(std::string, layout, "default",
          "workspace layout: default (<workspaces_dir>/<context>/workspace: src/, "
          "crash_report.txt) or arvo, as the ARVO harness (<workspaces_dir>/arvo_<task>-<agent "
          "under test>/workspace: src-vul/, <task>_error.txt)");
ABSL_FLAG(std::string, exec_template, "",
          "wraps each command, e.g. 'podman exec {container} {argv}' or 'docker exec {container} "
          "bash -lc {command}'; placeholders: {command} (the command, one argument) {argv} (its "
          "words, as a whole word) {workspace} {shared} {container} {context_id} {task_id} "
          "{env_name}; empty: run the command's own words here without a shell");
ABSL_FLAG(std::string, env_start_template, "",
          "starts each evaluation's own environment before its task is sent, e.g. 'podman run -d "
          "--rm --name {env_name} --network none -v {workspace}:/workspace coordinator-task "
          "sleep infinity'; the last line of its stdout is the handle (stored as the context's "
          "environment_handle, {container} in the other templates); placeholders: {workspace} "
          "{shared} {context_id} {task_id} {env_name}; needs --env_stop_template and an "
          "--exec_template naming {container}; empty: no environment per evaluation");
ABSL_FLAG(std::string, env_stop_template, "",
          "stops an evaluation's environment when the evaluation ends (scored, failed, "
          "abandoned, cancelled, its context deleted), e.g. 'podman rm -f -t 0 {container}'; "
          "must succeed when the environment is gone already; a failed stop is tried again "
          "every --env_sweep_interval");
ABSL_FLAG(absl::Duration, env_timeout, absl::Minutes(2),
          "time limit of one run of --env_start_template or --env_stop_template");
ABSL_FLAG(absl::Duration, env_sweep_interval, absl::Seconds(30),
          "how often environments whose evaluation ended (while this agent was down, or whose "
          "stop failed) are looked for and stopped; also once at start-up");
ABSL_FLAG(absl::Duration, command_timeout, absl::Seconds(60), "time limit of one command");
ABSL_FLAG(int64_t, output_cap, 64 << 10, "bytes of a command's output returned");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(10), "deadline of one coordinator call");

int main(int argc, char** argv) {
  common::SkipMutexDeadlockGraph();
  common::InitFlags("GREEN_AGENT_",
                    "green_agent: hosts root-cause-analysis evaluations for an agent under test.\n"
                    "  green_agent --coordinator=127.0.0.1:50051 --tasks_dir=examples/tasks",
                    argc, argv);
  common::RouteGrpcLogs();
  const common::StopSignals stop_signals;  // before any thread starts

  green_agent::GreenOptions options;
  options.name = absl::GetFlag(FLAGS_name);
  options.purple_agent = absl::GetFlag(FLAGS_purple_agent);
  options.purple_role = absl::GetFlag(FLAGS_purple_role);
  options.participant_wait = absl::GetFlag(FLAGS_participant_wait);
  options.tasks_dir = absl::GetFlag(FLAGS_tasks_dir);
  options.workspaces_dir = absl::GetFlag(FLAGS_workspaces_dir);
  options.layout = absl::GetFlag(FLAGS_layout);
  if (options.layout != "default" && options.layout != "arvo") {
    std::cerr << "green_agent: --layout must be default or arvo, not \"" << options.layout
              << "\"\n";
    return 2;
  }
  options.executor.exec_template = absl::GetFlag(FLAGS_exec_template);
  options.executor.timeout = absl::GetFlag(FLAGS_command_timeout);
  options.executor.output_cap =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_output_cap)));
  options.environment.start_template = absl::GetFlag(FLAGS_env_start_template);
  options.environment.stop_template = absl::GetFlag(FLAGS_env_stop_template);
  options.environment.timeout = absl::GetFlag(FLAGS_env_timeout);
  options.environment.sweep_interval = absl::GetFlag(FLAGS_env_sweep_interval);
  if (absl::Status s = green_agent::ValidateEnvironmentOptions(options.environment,
                                                               options.executor.exec_template);
      !s.ok()) {
    std::cerr << "green_agent: " << s.message() << "\n";
    return agent_runtime::kExitBadFlags;
  }
  options.retry.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  const std::string coordinator = absl::GetFlag(FLAGS_coordinator);
  options.coordinator_address = coordinator;
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      agent_runtime::CredentialsFromFlagsOrLog();
  if (!credentials.ok()) return agent_runtime::kExitBadFlags;
  green_agent::GreenAgent agent(options,
                                agent_runtime::CoordinatorChannel(coordinator, *credentials));

  agent_runtime::RuntimeOptions runtime;
  runtime.listen = absl::GetFlag(FLAGS_listen);
  runtime.advertise_host = absl::GetFlag(FLAGS_advertise_host);
  runtime.name = options.name;
  runtime.coordinator = coordinator;
  runtime.credentials = *credentials;
  agent_runtime::SetStandardCard(
      options.name,
      "Judge's environment host for root-cause-analysis evaluations: send \"Task ID: <id>\" or "
      "an assessment request ({\"participants\": {\"purple\": \"<agent card URL>\"}, "
      "\"config\": {\"task_ids\": [...]}}) to start one; the agent under test sends "
      "\"execute: <command>\" and \"submit\".",
      &runtime.card);
  runtime.card.add_default_output_modes("application/json");
  agent_runtime::ServeHooks hooks;
  hooks.after_start = [&agent] { agent.Start(); };  // the environment sweep, when configured
  hooks.before_shutdown = [&agent] { agent.PrepareShutdown(); };
  hooks.after_shutdown = [&agent] { agent.Stop(); };
  return agent_runtime::ServeUntilStopped(stop_signals, std::move(runtime), &agent, hooks);
}
