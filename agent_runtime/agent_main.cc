#include "agent_runtime/agent_main.h"

#include <memory>
#include <utility>

#include "common/log.h"

namespace agent_runtime {

absl::StatusOr<common::ClientCredentialOptions> CredentialsFromFlagsOrLog() {
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      common::ClientCredentialsFromFlags();
  if (!credentials.ok()) LOG_ERROR("%s", credentials.status().message());
  return credentials;
}

void SetStandardCard(absl::string_view name, absl::string_view description,
                     a2apb::AgentCard* card) {
  card->set_name(std::string(name));
  card->set_description(std::string(description));
  card->set_version("1.0.0");
  card->mutable_capabilities()->set_streaming(true);
  card->add_default_input_modes("text/plain");
  card->add_default_output_modes("text/plain");
}

int ServeUntilStopped(const common::StopSignals& stop_signals, RuntimeOptions runtime,
                      AgentExecutor* executor, const ServeHooks& hooks) {
  absl::StatusOr<std::unique_ptr<AgentServer>> server =
      AgentServer::Start(std::move(runtime), executor);
  if (!server.ok()) {
    LOG_ERROR("cannot start: %s", server.status().message());
    return kExitStartFailed;
  }
  if (hooks.after_start) hooks.after_start();
  LOG_INFO("received %s; stopping", stop_signals.Wait());
  if (hooks.before_shutdown) hooks.before_shutdown();
  (*server)->Shutdown();
  if (hooks.after_shutdown) hooks.after_shutdown();
  LOG_INFO("stopped cleanly");
  return 0;
}

}  // namespace agent_runtime
