// The agent cards the coordinator publishes: its own (every agent behind it, each through every
// binding) and one per agent (that agent alone, at its own base URL), and their source for the
// HTTP port.
#ifndef COORDINATOR_A2A_CARDS_H_
#define COORDINATOR_A2A_CARDS_H_

#include <functional>
#include <optional>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_http/bindings.h"
#include "absl/status/statusor.h"
#include "coordinator/store/a2a/agent_registry.h"

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

// Where the coordinator's bindings are reached, as the cards name them.
struct CardAddresses {
  // host:port of the gRPC A2AService.
  std::string grpc_address;
  // scheme://host:port of the HTTP port, serving the JSON-RPC and HTTP+JSON bindings; empty when
  // that port is off (the cards then list gRPC only).
  std::string http_base_url;
  // Whether calls need "Authorization: Bearer <token>" (a token file is configured).
  bool bearer_auth = false;
  // --default_agent.
  std::string default_agent;
  // The agent a call without a tenant reaches (default_agent, else the only agent; "" for
  // none; the HTTP binding works it out per card request). A2A 0.3's gRPC has no tenant, so only
  // this agent's cards, and the coordinator's, list a 0.3 GRPC interface.
  std::string tenantless_agent;
};

// Path of agent `name`'s base URL below the HTTP port: "/agents/<name>", the name
// percent-encoded where a URL needs it.
std::string AgentBasePath(const std::string& name);

// The coordinator's own card: for each registered agent, a GRPC interface with the agent's name
// as tenant and, with an HTTP port, JSONRPC and HTTP+JSON interfaces at the agent's base URL;
// then the 0.3 interfaces, which name no agent: JSONRPC and HTTP+JSON at the root, GRPC when a
// call without a tenant reaches an agent. One skill per agent.
[[nodiscard]] absl::StatusOr<a2apb::AgentCard> CoordinatorCard(AgentRegistryStore* agents,
                                                               const CardAddresses& addresses);

// Agent `agent`'s card as the coordinator publishes it at its base URL: the agent's own card
// (name, description, skills, modes) with the coordinator's interfaces (JSONRPC and HTTP+JSON at
// the base URL, then GRPC with the agent's name as tenant; then the same at protocol version 0.3,
// GRPC only for addresses.tenantless_agent), its security scheme, and streaming
// and push notifications on (the coordinator provides them whatever the agent does). The agent's
// signatures are dropped: they signed other interfaces.
a2apb::AgentCard PublishedAgentCard(const v1::Agent& agent, const CardAddresses& addresses);

// The cards of the HTTP port (a2a_http/bindings.h): the coordinator's at the root, each
// registered agent's at its base URL. `addresses` gives where the coordinator is reached; its
// http_base_url and tenantless_agent are worked out per request.
class RegistryCardSource final : public a2a_http::CardSource {
 public:
  RegistryCardSource(AgentRegistryStore* agents, std::function<CardAddresses()> addresses)
      : agents_(agents), addresses_(std::move(addresses)) {}

  absl::StatusOr<a2apb::AgentCard> Card(const std::optional<std::string>& agent,
                                        const std::string& base_url) override;

 private:
  AgentRegistryStore* const agents_;  // not owned
  const std::function<CardAddresses()> addresses_;
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_CARDS_H_
