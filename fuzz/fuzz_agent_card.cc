// libFuzzer harness for registering an agent by its card URL, after the fetch
// (coordinator/a2a/card_fetch.h AgentFromCard): whatever bytes an agent serves as its card are
// parsed, an interface chosen and the agent to store built, or refused cleanly. Invariants: what
// is accepted is what the registry stores (ValidateBindingEndpoint) and the gateway may dial (the
// allow-list passes its endpoint); the card the coordinator then publishes for the agent
// (cards.h PublishedAgentCard) parses back as a card.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "a2a_protocol/json_binding.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/url_allow_list.h"
#include "coordinator/a2a/card_fetch.h"
#include "coordinator/a2a/cards.h"
#include "coordinator/store/a2a/agent_registry.h"

namespace {

void Fail(const char* what, const absl::Status& status, absl::string_view input) {
  std::fprintf(stderr, "agent card: %s: %s\ninput: %.*s\n", what, status.ToString().c_str(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

void Check(const coordinator::v1::Agent& request, absl::string_view json,
           const common::HostAllowList& allow) {
  absl::StatusOr<coordinator::v1::Agent> agent = coordinator::AgentFromCard(request, json, allow);
  if (!agent.ok()) {
    switch (agent.status().code()) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kPermissionDenied:
      case absl::StatusCode::kFailedPrecondition:
        return;
      default:
        Fail("refused with a code the registry does not promise", agent.status(), json);
    }
  }
  if (absl::Status valid =
          coordinator::ValidateBindingEndpoint(agent->protocol_binding(), agent->endpoint());
      !valid.ok()) {
    Fail("the registry would refuse the interface chosen", valid, json);
  }
  if (absl::Status allowed = allow.Check(coordinator::EndpointUrl(*agent), "outbound_allow_hosts");
      !allowed.ok()) {
    Fail("the allow-list refuses the endpoint chosen", allowed, json);
  }
  (void)coordinator::InterfaceTenant(*agent);
  coordinator::CardAddresses addresses;
  addresses.grpc_address = "127.0.0.1:50051";
  addresses.http_base_url = "http://127.0.0.1:8080";
  const std::string published =
      a2a_protocol::ToJson(coordinator::PublishedAgentCard(*agent, addresses));
  if (absl::Status parsed = coordinator::ParseAgentCard(published).status(); !parsed.ok()) {
    Fail("the published card does not parse back", parsed, published);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  static const common::HostAllowList* loopback = new common::HostAllowList();
  static const common::HostAllowList* wider = [] {
    absl::StatusOr<common::HostAllowList> allow =
        common::HostAllowList::Parse("agent.example,agent.example:8443,[::1],10.0.0.7:9");
    if (!allow.ok()) Fail("the allow-list does not parse", allow.status(), "");
    return new common::HostAllowList(*std::move(allow));
  }();
  coordinator::v1::Agent request;
  request.set_name("fuzz-agent");
  request.set_card_url("http://127.0.0.1:9/.well-known/agent-card.json");
  Check(request, json, *loopback);
  Check(request, json, *wider);

  absl::StatusOr<lf::a2a::v1::AgentCard> card = coordinator::ParseAgentCard(json);
  if (card.ok()) {
    for (const lf::a2a::v1::AgentInterface& interface : card->supported_interfaces()) {
      (void)coordinator::InterfaceEndpoint(interface).ok();
    }
  }
  return 0;
}
