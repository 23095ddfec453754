// echo_agent: the example agent (agent_runtime/echo_agent.h) as a process. It registers with
// the coordinator at start-up and stops cleanly on SIGTERM/SIGINT.

#include "absl/flags/flag.h"
#include "agent_runtime/agent_main.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/echo_agent.h"
#include "common/env_flags.h"
#include "common/grpc_log.h"
#include "common/mutex_mode.h"
#include "common/stop_signals.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "gRPC address to listen on; port 0 picks one");
ABSL_FLAG(std::string, name, "echo", "agent name: its tenant at the coordinator");
ABSL_FLAG(std::string, coordinator, "",
          "coordinator address (host:port) to register with; empty: do not register");

int main(int argc, char** argv) {
  common::SkipMutexDeadlockGraph();
  common::InitFlags("ECHO_AGENT_",
                    "echo_agent: an A2A v1.0 example agent.\n"
                    "  echo_agent --coordinator=127.0.0.1:50051 [--name=echo]",
                    argc, argv);
  common::RouteGrpcLogs();
  const common::StopSignals stop_signals;  // before any thread starts

  agent_runtime::EchoAgent agent;
  agent_runtime::RuntimeOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.name = absl::GetFlag(FLAGS_name);
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      agent_runtime::CredentialsFromFlagsOrLog();
  if (!credentials.ok()) return agent_runtime::kExitBadFlags;
  options.credentials = *credentials;
  agent_runtime::SetStandardCard(options.name,
                                 "Echoes text back; see agent_runtime/echo_agent.h for commands.",
                                 &options.card);
  return agent_runtime::ServeUntilStopped(stop_signals, std::move(options), &agent);
}
