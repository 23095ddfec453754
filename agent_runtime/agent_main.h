// The life every agent process shares, so the agents' main() functions keep only what is theirs
// (their flags, their executor, their card's description): the credentials from
// --auth_token_file / --tls_ca_file, the common part of the agent card, serving until SIGTERM or
// SIGINT, and the shutdown order (the server first, so running executions are abandoned and the
// coordinator delivers them again later; then whatever the agent runs on its own).
#ifndef AGENT_RUNTIME_AGENT_MAIN_H_
#define AGENT_RUNTIME_AGENT_MAIN_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent_runtime/agent_runtime.h"
#include "common/grpc_client.h"
#include "common/stop_signals.h"

namespace agent_runtime {

// Exit codes of an agent process: a bad flag or file (2), a start that failed (1).
inline constexpr int kExitBadFlags = 2;
inline constexpr int kExitStartFailed = 1;

// The client credentials named by --auth_token_file and --tls_ca_file. A bad file is logged
// here; main() then exits with kExitBadFlags.
[[nodiscard]] absl::StatusOr<common::ClientCredentialOptions> CredentialsFromFlagsOrLog();

// Sets the card fields every agent of ours shares: name, description, version 1.0.0, streaming,
// text/plain in and out. An agent adds its other modes after.
void SetStandardCard(absl::string_view name, absl::string_view description, a2apb::AgentCard* card);

// The agent's HTTP port from --host, --port and --card-url (--card_url), the flags evaluation
// platforms start agents with: with --port (0 picks one) RuntimeOptions::http_listen becomes
// host:port and card_url the given URL (agent_http.h). INVALID_ARGUMENT for a port out of range or
// a card URL that is not http(s).
[[nodiscard]] absl::Status ApplyHttpFlags(RuntimeOptions* options);

// Hooks around the serving period; each may be empty.
struct ServeHooks {
  // Runs once the server serves and is registered (e.g. resume unfinished work).
  std::function<void()> after_start;
  // Runs when the stop signal came, before the server stops (e.g. tell the agent that the
  // cancellations to come are the runtime abandoning its executions, not a client's).
  std::function<void()> before_shutdown;
  // Runs after the server stopped (e.g. stop the agent's own loops).
  std::function<void()> after_shutdown;
};

// Starts `executor` on `runtime` (with ApplyHttpFlags), waits for a stop signal, shuts down, logs
// each step and returns main()'s exit code (0, kExitBadFlags for bad HTTP flags, or
// kExitStartFailed when the server does not start).
int ServeUntilStopped(const common::StopSignals& stop_signals, RuntimeOptions runtime,
                      AgentExecutor* executor, const ServeHooks& hooks = {});

}  // namespace agent_runtime

#endif  // AGENT_RUNTIME_AGENT_MAIN_H_
