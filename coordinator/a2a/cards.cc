#include "coordinator/a2a/cards.h"

#include "a2a_protocol/bindings.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/a2a/tenant_routing.h"

namespace coordinator {
namespace {

void AddInterface(a2apb::AgentCard* card, const std::string& url, const char* binding,
                  const std::string& tenant, const char* version = a2a_protocol::kVersion) {
  a2apb::AgentInterface* iface = card->add_supported_interfaces();
  iface->set_url(url);
  iface->set_protocol_binding(binding);
  if (!tenant.empty()) iface->set_tenant(tenant);
  iface->set_protocol_version(version);
}

// Agent `name`'s base URL; "" when the HTTP port is off.
std::string AgentBaseUrl(const std::string& name, const CardAddresses& addresses) {
  if (addresses.http_base_url.empty()) return "";
  return absl::StrCat(addresses.http_base_url, AgentBasePath(name));
}

// The interfaces that reach `name`: both JSON bindings at its base URL (when the HTTP port is
// on), then gRPC with its name as tenant.
void AddAgentInterfaces(a2apb::AgentCard* card, const std::string& name,
                        const CardAddresses& addresses) {
  if (const std::string base = AgentBaseUrl(name, addresses); !base.empty()) {
    AddInterface(card, base, a2a_protocol::kBindingJsonRpc, "");
    AddInterface(card, base, a2a_protocol::kBindingHttpJson, "");
  }
  AddInterface(card, addresses.grpc_address, a2a_protocol::kBindingGrpc, name);
}

// The 0.3 interfaces at `base_url` (an agent's, or the root: 0.3's HTTP+JSON paths start with
// /v1, so one URL serves both JSON bindings), and gRPC when it reaches the agent without a tenant.
void AddV03Interfaces(a2apb::AgentCard* card, const std::string& base_url, bool grpc,
                      const CardAddresses& addresses) {
  if (!base_url.empty()) {
    AddInterface(card, base_url, a2a_protocol::kBindingJsonRpc, "", a2a_protocol::v03::kVersion);
    AddInterface(card, base_url, a2a_protocol::kBindingHttpJson, "", a2a_protocol::v03::kVersion);
  }
  if (grpc) {
    AddInterface(card, addresses.grpc_address, a2a_protocol::kBindingGrpc, "",
                 a2a_protocol::v03::kVersion);
  }
}

// The "bearer" HTTP security scheme, required on every call (docs/security.md).
void AddBearerScheme(a2apb::AgentCard* card) {
  a2apb::HTTPAuthSecurityScheme* bearer =
      (*card->mutable_security_schemes())["bearer"].mutable_http_auth_security_scheme();
  bearer->set_scheme("Bearer");
  bearer->set_description(
      "A token from the coordinator's token file, sent as \"Authorization: Bearer <token>\" "
      "(an HTTP header, or gRPC metadata) on every call");
  (*card->add_security_requirements()->mutable_schemes())["bearer"];
}

}  // namespace

std::string AgentBasePath(const std::string& name) {
  std::string path = "/agents/";
  for (const char c : name) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      path += c;
    } else {
      absl::StrAppend(&path, "%", absl::BytesToHexString(absl::string_view(&c, 1)));
    }
  }
  return path;
}

absl::StatusOr<a2apb::AgentCard> CoordinatorCard(AgentRegistryStore* agents,
                                                 const CardAddresses& addresses) {
  a2apb::AgentCard card;
  card.set_name("coordinator");
  card.set_description(
      "Durable A2A gateway: reach each registered agent through the interfaces of its name (the "
      "gRPC tenant, or its base URL below /agents/); tasks, messages and events are stored and "
      "outlive agent restarts.");
  card.set_version("1.0.0");
  card.mutable_capabilities()->set_streaming(true);
  card.mutable_capabilities()->set_push_notifications(true);
  card.mutable_capabilities()->set_extended_agent_card(false);
  card.add_default_input_modes("text/plain");
  card.add_default_output_modes("text/plain");
  if (addresses.bearer_auth) AddBearerScheme(&card);
  v1::ListAgentsRequest request;
  request.set_page_size(1000);
  while (true) {
    ASSIGN_OR_RETURN(v1::ListAgentsResponse page, agents->List(request));
    for (const v1::Agent& agent : page.agents()) {
      AddAgentInterfaces(&card, agent.name(), addresses);
      a2apb::AgentSkill* skill = card.add_skills();
      skill->set_id(agent.name());
      skill->set_name(agent.card().name().empty() ? agent.name() : agent.card().name());
      skill->set_description(agent.card().description().empty()
                                 ? absl::StrCat("Agent ", agent.name(), " behind this gateway")
                                 : agent.card().description());
      skill->add_tags("agent");
    }
    if (page.next_page_token().empty()) break;
    request.set_page_token(page.next_page_token());
  }
  AddV03Interfaces(&card, addresses.http_base_url, !addresses.tenantless_agent.empty(), addresses);
  return card;
}

a2apb::AgentCard PublishedAgentCard(const v1::Agent& agent, const CardAddresses& addresses) {
  a2apb::AgentCard card = agent.card();
  card.clear_supported_interfaces();
  card.clear_signatures();
  card.clear_security_schemes();
  card.clear_security_requirements();
  if (card.name().empty()) card.set_name(agent.name());
  if (card.description().empty()) {
    card.set_description(absl::StrCat("Agent ", agent.name(), " behind the coordinator"));
  }
  if (card.version().empty()) card.set_version("1.0.0");
  card.mutable_capabilities()->set_streaming(true);
  card.mutable_capabilities()->set_push_notifications(true);
  if (card.default_input_modes().empty()) card.add_default_input_modes("text/plain");
  if (card.default_output_modes().empty()) card.add_default_output_modes("text/plain");
  if (card.skills().empty()) {
    a2apb::AgentSkill* skill = card.add_skills();
    skill->set_id(agent.name());
    skill->set_name(card.name());
    skill->set_description(card.description());
    skill->add_tags("agent");
  }
  AddAgentInterfaces(&card, agent.name(), addresses);
  AddV03Interfaces(&card, AgentBaseUrl(agent.name(), addresses),
                   addresses.tenantless_agent == agent.name(), addresses);
  if (addresses.bearer_auth) AddBearerScheme(&card);
  return card;
}

absl::StatusOr<a2apb::AgentCard> RegistryCardSource::Card(const std::optional<std::string>& agent,
                                                          const std::string& base_url) {
  CardAddresses addresses = addresses_();
  addresses.http_base_url = base_url;
  absl::StatusOr<std::string> tenantless = ResolveTenant(agents_, addresses.default_agent, "");
  if (tenantless.ok()) addresses.tenantless_agent = *std::move(tenantless);
  if (!agent.has_value()) return CoordinatorCard(agents_, addresses);
  ASSIGN_OR_RETURN(const v1::Agent registered, agents_->Get(*agent));
  return PublishedAgentCard(registered, addresses);
}

}  // namespace coordinator
