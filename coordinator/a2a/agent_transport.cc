#include "coordinator/a2a/agent_transport.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "a2a_protocol/bindings.h"
#include "a2a_protocol/v03_json.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/a2a/card_fetch.h"
#include "coordinator/a2a/grpc_transport.h"
#include "coordinator/a2a/http_transport.h"
#include "coordinator/store/a2a/agent_registry.h"

namespace coordinator {
namespace {

// The payload NotListening sets; its value is empty.
constexpr absl::string_view kNotListening = "type.coordinator.dev/a2a.NotListening";

}  // namespace

absl::Status NotListening(absl::Status status) {
  status.SetPayload(kNotListening, absl::Cord());
  return status;
}

bool IsNotListening(const absl::Status& status) {
  return status.GetPayload(kNotListening).has_value();
}

absl::Status KeepNotListening(const absl::Status& cause, absl::Status status) {
  return IsNotListening(cause) ? NotListening(std::move(status)) : status;
}

size_t TakeBurst(std::deque<a2apb::StreamResponse>* queue,
                 std::vector<a2apb::StreamResponse>* out) {
  size_t taken = 0;
  size_t bytes = 0;
  while (!queue->empty() && out->size() < kMaxBurstEvents && bytes < kMaxBurstBytes) {
    bytes += queue->front().ByteSizeLong();
    out->push_back(std::move(queue->front()));
    queue->pop_front();
    ++taken;
  }
  return taken;
}

bool OpeningComplete(const std::deque<a2apb::StreamResponse>& queue,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> holds,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> ends) {
  if (queue.empty()) return false;
  if (queue.size() >= kMaxBurstEvents || !holds(queue.front())) return true;
  return std::any_of(std::next(queue.begin()), queue.end(), ends);
}

absl::StatusOr<std::unique_ptr<AgentTransport>> AgentTransports::For(const v1::Agent& agent) {
  const std::string binding =
      agent.protocol_binding().empty() ? a2a_protocol::kBindingGrpc : agent.protocol_binding();
  RETURN_IF_ERROR(ValidateBindingEndpoint(binding, agent.endpoint()));
  if (!agent.card_url().empty()) {
    // Checked again at call time, as webhooks are: an agent registered before
    // --outbound_allow_hosts changed is not called.
    absl::Status allowed =
        options_.outbound_allow.Check(EndpointUrl(agent), "outbound_allow_hosts");
    if (!allowed.ok()) {
      return absl::Status(allowed.code(), absl::StrCat("agent ", agent.name(),
                                                       " is not called: ", allowed.message()));
    }
  }
  const std::string tenant = InterfaceTenant(agent);
  // 0.3 agents stream only when their card says so (the capability defaults to off).
  const bool v03 = AgentVersion(agent) == a2a_protocol::v03::kVersion;
  if (binding == a2a_protocol::kBindingGrpc) {
    return std::make_unique<GrpcAgentTransport>(
        ChannelFor(agent.endpoint()), tenant,
        v03 ? GrpcAgentTransport::Version::k03 : GrpcAgentTransport::Version::k10,
        !v03 || agent.card().capabilities().streaming());
  }
  ASSIGN_OR_RETURN(common::HttpUrl url, common::ParseHttpUrl(agent.endpoint()));
  if (v03) {
    return std::make_unique<HttpAgentTransport>(
        binding == a2a_protocol::kBindingJsonRpc ? HttpAgentTransport::Binding::kJsonRpcV03
                                                 : HttpAgentTransport::Binding::kRestV03,
        std::move(url), "", options_.max_event_bytes, options_.connect_timeout,
        agent.card().capabilities().streaming());
  }
  return std::make_unique<HttpAgentTransport>(
      binding == a2a_protocol::kBindingJsonRpc ? HttpAgentTransport::Binding::kJsonRpc
                                               : HttpAgentTransport::Binding::kHttpJson,
      std::move(url), tenant, options_.max_event_bytes, options_.connect_timeout);
}

std::shared_ptr<grpc::Channel> AgentTransports::ChannelFor(const std::string& endpoint) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<grpc::Channel>& channel = channels_[endpoint];
  if (channel == nullptr) channel = NewAgentChannel(endpoint);
  return channel;
}

}  // namespace coordinator
