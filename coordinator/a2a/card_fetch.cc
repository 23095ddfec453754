#include "coordinator/a2a/card_fetch.h"

#include <optional>
#include <utility>
#include <vector>

#include "a2a_http/http.h"
#include "a2a_protocol/bindings.h"
#include "a2a_protocol/v03_json.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordinator {
namespace {

namespace a2apb = ::lf::a2a::v1;

// Our order of preference (section 8.3.2 lets the client choose among what the card offers).
constexpr const char* kPreference[] = {a2a_protocol::kBindingGrpc, a2a_protocol::kBindingJsonRpc,
                                       a2a_protocol::kBindingHttpJson};

// The binding name as we spell it when `name` is one we speak (in any case), else nullopt.
std::optional<std::string> KnownBinding(absl::string_view name) {
  for (const char* binding : kPreference) {
    if (absl::EqualsIgnoreCase(name, binding)) return std::string(binding);
  }
  return std::nullopt;
}

// The version an interface's protocol_version stands for: 1.0 for 1.x or unset, 0.3 for 0.3.x;
// "" for another.
std::string VersionOf(absl::string_view version) {
  if (version.empty() || version == "1" || absl::StartsWith(version, "1.")) return kVersion10;
  if (version == a2a_protocol::v03::kVersion ||
      absl::StartsWith(version, absl::StrCat(a2a_protocol::v03::kVersion, "."))) {
    return a2a_protocol::v03::kVersion;
  }
  return "";
}

std::string UrlOf(absl::string_view binding, absl::string_view endpoint) {
  if (binding == a2a_protocol::kBindingGrpc && !absl::StrContains(endpoint, "://")) {
    return absl::StrCat("http://", endpoint);
  }
  return std::string(endpoint);
}

}  // namespace

absl::StatusOr<a2apb::AgentCard> ParseAgentCard(absl::string_view json) {
  google::protobuf::Struct object;
  if (google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(json.data(), json.size()), &object)
          .ok() &&
      a2a_protocol::v03::IsV03Card(object)) {
    absl::StatusOr<a2apb::AgentCard> card = a2a_protocol::v03::CardFromJson(object);
    if (!card.ok() && absl::IsInvalidArgument(card.status())) {
      return absl::InvalidArgumentError(
          absl::StrCat("not an A2A agent card (0.3): ", card.status().message()));
    }
    return card;
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  a2apb::AgentCard card;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &card, options);
  if (!parsed.ok()) {
    // Protobuf's parser quotes the input over several lines: its first line says enough.
    const std::string why = parsed.message().as_string();
    return absl::InvalidArgumentError(
        absl::StrCat("not an A2A agent card (JSON of lf.a2a.v1.AgentCard): ",
                     absl::string_view(why).substr(0, why.find('\n'))));
  }
  return card;
}

absl::StatusOr<std::string> InterfaceEndpoint(const a2apb::AgentInterface& interface) {
  const std::optional<std::string> binding = KnownBinding(interface.protocol_binding());
  if (!binding.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("binding \"", interface.protocol_binding(), "\" is not one we speak"));
  }
  const std::string version = VersionOf(interface.protocol_version());
  if (version.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        *binding, " interface speaks A2A ", interface.protocol_version(), ", not 1.x or 0.3"));
  }
  const std::string& url = interface.url();
  std::string endpoint;
  if (*binding == a2a_protocol::kBindingGrpc) {
    // A gRPC interface names what to dial: host:port (checked below, as the registry checks
    // it), or an http(s) URL without a path.
    endpoint = url;
    if (absl::StrContains(url, "://")) {
      ASSIGN_OR_RETURN(common::HttpUrl parsed, common::ParseHttpUrl(url));
      if (!parsed.path.empty() && parsed.path != "/") {
        return absl::InvalidArgumentError(
            absl::StrCat("GRPC interface URL \"", url, "\" has a path; gRPC dials host:port"));
      }
      endpoint = parsed.scheme == "https" ? absl::StrCat("https://", parsed.HostPort())
                                          : parsed.HostPort();
    }
  } else {
    ASSIGN_OR_RETURN(common::HttpUrl parsed, common::ParseHttpUrl(url));
    // What was checked is what is called: the parsed scheme, host and port.
    endpoint = absl::StrCat(parsed.scheme, "://", parsed.HostPort(), parsed.path);
  }
  // An interface the registry would refuse to store (an endpoint past its size limit) is one
  // the coordinator cannot use: it is passed over like any other, saying why.
  RETURN_IF_ERROR(ValidateBindingEndpoint(*binding, endpoint));
  return endpoint;
}

absl::StatusOr<ChosenInterface> ChooseInterface(const a2apb::AgentCard& card,
                                                const common::HostAllowList& allow) {
  std::vector<std::string> skipped;
  absl::Status refused;
  // The version first (1.0 before 0.3), then the binding, then the card's order.
  for (const char* version : {kVersion10, a2a_protocol::v03::kVersion})
    for (const char* binding : kPreference) {
      for (const a2apb::AgentInterface& interface : card.supported_interfaces()) {
        if (!absl::EqualsIgnoreCase(interface.protocol_binding(), binding) ||
            VersionOf(interface.protocol_version()) != version) {
          continue;
        }
        absl::StatusOr<std::string> endpoint = InterfaceEndpoint(interface);
        if (!endpoint.ok()) {
          skipped.push_back(absl::StrCat(interface.url(), ": ", endpoint.status().message()));
          continue;
        }
        absl::Status allowed = allow.Check(UrlOf(binding, *endpoint), "outbound_allow_hosts");
        if (!allowed.ok()) {
          if (refused.ok()) refused = allowed;
          continue;
        }
        return ChosenInterface{binding, *std::move(endpoint), interface.tenant(), version};
      }
    }
  if (!refused.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("the card's interfaces may not be called: ", refused.message()));
  }
  std::vector<std::string> offered;
  for (const a2apb::AgentInterface& interface : card.supported_interfaces()) {
    offered.push_back(absl::StrCat(interface.protocol_binding(), " ", interface.protocol_version(),
                                   " at ", interface.url()));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the card lists no interface the coordinator speaks (GRPC, JSONRPC or HTTP+JSON at A2A "
      "1.x or 0.3); it lists ",
      offered.empty() ? "none" : absl::StrJoin(offered, ", "),
      skipped.empty() ? "" : absl::StrCat(" (", absl::StrJoin(skipped, "; "), ")")));
}

std::string InterfaceTenant(const v1::Agent& agent) {
  if (agent.card_url().empty()) return "";  // registered by endpoint: as before, no tenant
  for (const a2apb::AgentInterface& interface : agent.card().supported_interfaces()) {
    if (!absl::EqualsIgnoreCase(interface.protocol_binding(), agent.protocol_binding()) ||
        VersionOf(interface.protocol_version()) != AgentVersion(agent)) {
      continue;
    }
    absl::StatusOr<std::string> endpoint = InterfaceEndpoint(interface);
    if (endpoint.ok() && *endpoint == agent.endpoint()) return interface.tenant();
  }
  return "";
}

std::string AgentVersion(const v1::Agent& agent) {
  return VersionOf(agent.protocol_version()).empty() ? kVersion10
                                                     : VersionOf(agent.protocol_version());
}

std::string EndpointUrl(const v1::Agent& agent) {
  return UrlOf(agent.protocol_binding(), agent.endpoint());
}

absl::StatusOr<v1::Agent> ResolveRegistration(const v1::Agent& request,
                                              const CardFetchOptions& options) {
  if (request.card_url().empty()) {
    if (request.endpoint().empty()) {
      return absl::InvalidArgumentError(
          "give the agent's gRPC endpoint (host:port) or its card_url");
    }
    v1::Agent agent = request;
    agent.set_protocol_binding(a2a_protocol::kBindingGrpc);  // output only: never the caller's
    agent.set_protocol_version(kVersion10);
    return agent;
  }
  if (!request.endpoint().empty()) {
    return absl::InvalidArgumentError(
        "give either an endpoint or a card_url, not both: the endpoint comes from the card");
  }
  const std::string& card_url = request.card_url();
  RETURN_IF_ERROR(options.outbound_allow.Check(card_url, "outbound_allow_hosts"));
  ASSIGN_OR_RETURN(const common::HttpUrl url, common::ParseHttpUrl(card_url));
  a2a_http::HttpGetOptions get;
  get.timeout = options.timeout;
  get.max_bytes = options.max_card_bytes;
  get.headers.emplace_back("Accept", "application/json");
  // What was checked is what is called: the parsed scheme, host and port.
  absl::StatusOr<std::string> json =
      a2a_http::HttpGet(absl::StrCat(url.scheme, "://", url.HostPort(),
                                     absl::StartsWith(url.path, "/") ? "" : "/", url.path),
                        get);
  if (!json.ok()) {
    return absl::Status(json.status().code(),
                        absl::StrCat("cannot fetch the card of agent ", request.name(), ": ",
                                     json.status().message()));
  }
  return AgentFromCard(request, *json, options.outbound_allow);
}

absl::StatusOr<v1::Agent> AgentFromCard(const v1::Agent& request, absl::string_view card_json,
                                        const common::HostAllowList& allow) {
  const std::string& card_url = request.card_url();
  absl::StatusOr<a2apb::AgentCard> card = ParseAgentCard(card_json);
  if (!card.ok()) {
    return absl::Status(card.status().code(),
                        absl::StrCat("the body at ", card_url, " is ", card.status().message()));
  }
  absl::StatusOr<ChosenInterface> chosen = ChooseInterface(*card, allow);
  if (!chosen.ok()) {
    return absl::Status(chosen.status().code(),
                        absl::StrCat("agent ", request.name(), " (card ", card_url,
                                     "): ", chosen.status().message()));
  }
  v1::Agent agent;
  agent.set_name(request.name());
  agent.set_card_url(card_url);
  agent.set_endpoint(chosen->endpoint);
  agent.set_protocol_binding(chosen->binding);
  agent.set_protocol_version(chosen->version);
  if (request.has_max_in_flight()) agent.set_max_in_flight(request.max_in_flight());
  *agent.mutable_card() = *std::move(card);
  return agent;
}

}  // namespace coordinator
