#include "agent_runtime/agent_main.h"

#include <memory>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

ABSL_FLAG(std::string, host, "127.0.0.1",
          "address of the HTTP port (--port), as evaluation platforms start agents: 0.0.0.0 in a "
          "container");
ABSL_FLAG(int, port, -1,
          "HTTP port serving the agent card (/.well-known/agent-card.json) and A2A JSON-RPC "
          "(1.0 and 0.3) and HTTP+JSON; 0 picks one; -1 (the default): no HTTP port");
ABSL_FLAG(std::string, card_url, "",
          "the URL the agent card names for the HTTP port (--card-url): where readers reach the "
          "agent (a container's name, a proxy); default: the address each reader used");

namespace agent_runtime {

absl::Status ApplyHttpFlags(RuntimeOptions* options) {
  const int port = absl::GetFlag(FLAGS_port);
  const std::string card_url = absl::GetFlag(FLAGS_card_url);
  if (port < 0) {
    if (!card_url.empty()) return absl::InvalidArgumentError("--card-url needs --port");
    return absl::OkStatus();
  }
  if (port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port ", port, " is not a port (0 to 65535)"));
  }
  if (!card_url.empty() && !absl::StartsWith(card_url, "http://") &&
      !absl::StartsWith(card_url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--card-url ", card_url, " is not an http:// or https:// URL"));
  }
  const std::string host = absl::GetFlag(FLAGS_host);
  options->http_listen = absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port)
                                                      : absl::StrCat(host, ":", port);
  options->card_url = card_url;
  return absl::OkStatus();
}

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
  if (absl::Status http = ApplyHttpFlags(&runtime); !http.ok()) {
    LOG_ERROR("%s", http.message());
    return kExitBadFlags;
  }
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
