// Registering an agent by its card URL: the card is fetched over HTTP(S) through the outbound
// allow-list (the one webhooks use), with a deadline and a size limit, parsed with Protobuf's JSON
// mapping, and one of its supportedInterfaces chosen for the gateway to deliver over: GRPC, else
// JSONRPC, else HTTP+JSON (specification sections 8.3 and 5.3). The fetch blocks: run it on a
// worker thread, never a gRPC reactor thread.
#ifndef COORDINATOR_A2A_CARD_FETCH_H_
#define COORDINATOR_A2A_CARD_FETCH_H_

#include <cstddef>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/url_allow_list.h"
#include "coordinator/v1/agent_registry.pb.h"

namespace coordinator {

struct CardFetchOptions {
  // Hosts a card URL, and the interface chosen from the card, may name (--outbound_allow_hosts;
  // default loopback only).
  common::HostAllowList outbound_allow;
  // Deadline of the whole fetch (default 10s, --a2a_call_timeout).
  absl::Duration timeout = absl::Seconds(10);
  // Largest card accepted, in bytes (default 256 KiB, what the registry stores at most).
  size_t max_card_bytes = 256 << 10;
};

// The interface of a card the gateway delivers over.
struct ChosenInterface {
  // "GRPC", "JSONRPC" or "HTTP+JSON".
  std::string binding;
  // What the registry stores as the agent's endpoint: host:port or https://host:port for GRPC,
  // the interface URL (scheme://host:port/path, as checked) for the two HTTP bindings.
  std::string endpoint;
  // The interface's tenant, sent in every request to the agent ("" for none).
  std::string tenant;
  // The A2A version spoken over it: kVersion10 or "0.3".
  std::string version;
};

// The protocol_version of an agent delivered to over A2A 1.x.
inline constexpr char kVersion10[] = "1.0";

// Parses an agent card: Protobuf's JSON mapping of lf.a2a.v1.AgentCard, unknown fields ignored;
// a 0.3 card (a `url` and no supportedInterfaces) as the 1.0 card it stands for
// (a2a_protocol::v03::CardFromJson: its interfaces at protocol version 0.3).
// INVALID_ARGUMENT when `json` is not JSON or not a card; FAILED_PRECONDITION for a card of
// another version (0.2).
[[nodiscard]] absl::StatusOr<lf::a2a::v1::AgentCard> ParseAgentCard(absl::string_view json);

// The endpoint the gateway would dial for `interface` (see ChosenInterface::endpoint);
// INVALID_ARGUMENT when its URL does not suit its binding, FAILED_PRECONDITION for a binding or
// protocol version (other than 1.x or unset, or 0.3) we do not speak.
[[nodiscard]] absl::StatusOr<std::string> InterfaceEndpoint(
    const lf::a2a::v1::AgentInterface& interface);

// Chooses the interface of `card` to deliver over: among those we speak and `allow` allows, the
// version first (1.x, else 0.3), then the first GRPC one in the card's order, else the first
// JSONRPC one, else the first HTTP+JSON one.
// PERMISSION_DENIED when every interface we speak names a host `allow` refuses;
// FAILED_PRECONDITION when the card lists none we speak.
[[nodiscard]] absl::StatusOr<ChosenInterface> ChooseInterface(const lf::a2a::v1::AgentCard& card,
                                                              const common::HostAllowList& allow);

// The tenant to send to `agent`: that of the first interface of its card with its binding and
// endpoint; "" when there is none (an agent registered by endpoint).
std::string InterfaceTenant(const v1::Agent& agent);

// The A2A version the gateway speaks to `agent`: its protocol_version, kVersion10 when unset
// (registered before versions were stored).
std::string AgentVersion(const v1::Agent& agent);

// The URL the allow-list judges for an agent's endpoint: the endpoint itself when it is a URL,
// "http://host:port" for a plaintext gRPC host:port.
std::string EndpointUrl(const v1::Agent& agent);

// What a RegisterAgent request is stored as. With card_url and no endpoint: the card fetched
// (allow-list, deadline, size limit), stored with the interface ChooseInterface picks as endpoint
// and protocol_binding. With an endpoint and no card_url: the request as it came, over GRPC.
// Errors, and nothing to store: INVALID_ARGUMENT (both or neither of endpoint and card_url, a
// malformed URL, a body that is not a card), PERMISSION_DENIED (the allow-list refuses the card
// URL or the card's interfaces), UNAVAILABLE (no answer, or a 5xx), RESOURCE_EXHAUSTED (a card
// over max_card_bytes), FAILED_PRECONDITION (another HTTP status, or no interface we speak).
[[nodiscard]] absl::StatusOr<v1::Agent> ResolveRegistration(const v1::Agent& request,
                                                            const CardFetchOptions& options);

// The second half of ResolveRegistration, after the fetch: `card_json` (the body read from
// request.card_url()) parsed, an interface chosen, and the agent to store built from them, named
// as `request`. Errors: INVALID_ARGUMENT (not a card), PERMISSION_DENIED and FAILED_PRECONDITION
// as ChooseInterface has them. Does no I/O (the card fuzzer calls it).
[[nodiscard]] absl::StatusOr<v1::Agent> AgentFromCard(const v1::Agent& request,
                                                      absl::string_view card_json,
                                                      const common::HostAllowList& allow);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_CARD_FETCH_H_
