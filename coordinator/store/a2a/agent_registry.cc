#include "coordinator/store/a2a/agent_registry.h"

#include <memory>
#include <string>

#include "a2a_protocol/bindings.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/url_allow_list.h"
#include "common/validation.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
// A card is small; this bounds what one registration can store.
constexpr size_t kMaxCardBytes = 256 << 10;
// Largest Agent.max_in_flight.
constexpr int kMaxInFlightLimit = 10000;

}  // namespace

absl::Status ValidateEndpoint(absl::string_view endpoint) {
  RETURN_IF_ERROR(common::ValidateId("endpoint", endpoint));
  const size_t colon = endpoint.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(endpoint.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint \"", endpoint, "\" is not host:port with a port in 1..65535"));
  }
  return absl::OkStatus();
}

absl::Status ValidateBindingEndpoint(absl::string_view binding, absl::string_view endpoint) {
  if (binding == a2a_protocol::kBindingGrpc) {
    if (!absl::StartsWith(endpoint, "https://")) return ValidateEndpoint(endpoint);
    RETURN_IF_ERROR(common::ValidateId("endpoint", endpoint));
    ASSIGN_OR_RETURN(common::HttpUrl url, common::ParseHttpUrl(endpoint));
    if (!url.path.empty() && url.path != "/") {
      return absl::InvalidArgumentError(
          absl::StrCat("gRPC endpoint \"", endpoint, "\" has a path; gRPC dials host:port"));
    }
    return absl::OkStatus();
  }
  if (binding == a2a_protocol::kBindingJsonRpc || binding == a2a_protocol::kBindingHttpJson) {
    RETURN_IF_ERROR(common::ValidateId("endpoint", endpoint));
    return common::ParseHttpUrl(endpoint).status();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("protocol_binding \"", binding, "\" is not GRPC, JSONRPC or HTTP+JSON"));
}

absl::StatusOr<v1::Agent> AgentRegistryStore::Register(const v1::Agent& request) {
  RETURN_IF_ERROR(common::ValidateId("name", request.name()));
  // An agent's name is also the first segment of its HTTP+JSON paths (/{tenant}/...), which
  // must not be one the HTTP port serves itself.
  // "v1" starts A2A 0.3's HTTP+JSON paths at the root (/v1/message:send).
  for (absl::string_view reserved : {"agents", "console", "metrics", ".well-known", "v1"}) {
    if (request.name() == reserved) {
      return absl::InvalidArgumentError(
          absl::StrCat("agent name \"", reserved, "\" is reserved: /", reserved,
                       "/ on the HTTP port is the coordinator's own (choose another name)"));
    }
  }
  const std::string binding =
      request.protocol_binding().empty() ? a2a_protocol::kBindingGrpc : request.protocol_binding();
  RETURN_IF_ERROR(ValidateBindingEndpoint(binding, request.endpoint()));
  const std::string& version = request.protocol_version();
  if (!version.empty() && version != "1.0" && version != "0.3") {
    return absl::InvalidArgumentError(
        absl::StrCat("protocol_version \"", version, "\" is not 1.0 or 0.3"));
  }
  if (!request.card_url().empty()) {
    RETURN_IF_ERROR(common::ValidateId("card_url", request.card_url()));
    RETURN_IF_ERROR(common::ParseHttpUrl(request.card_url()).status());
  }
  if (request.max_in_flight() < 0 || request.max_in_flight() > kMaxInFlightLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_in_flight must be 0 (no limit) to ",
                                                   kMaxInFlightLimit, ", not ",
                                                   request.max_in_flight()));
  }
  if (request.card().ByteSizeLong() > kMaxCardBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("agent card is larger than ", kMaxCardBytes, " bytes"));
  }
  v1::Agent agent;
  agent.set_name(request.name());
  agent.set_endpoint(request.endpoint());
  *agent.mutable_card() = request.card();
  agent.set_card_url(request.card_url());
  agent.set_protocol_binding(binding);
  agent.set_protocol_version(version);
  if (request.has_max_in_flight()) agent.set_max_in_flight(request.max_in_flight());
  const auto now = ToProtoTime(absl::Now());
  RETURN_IF_ERROR(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    const std::string key = keys::A2AAgent(agent.name());
    absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
    *agent.mutable_create_time() = now;
    if (existing.ok()) {
      v1::Agent old;
      RETURN_IF_ERROR(DecodeRecord(*existing, &old));
      *agent.mutable_create_time() = old.create_time();
      if (!agent.has_max_in_flight() && old.has_max_in_flight()) {
        agent.set_max_in_flight(old.max_in_flight());
      }
    } else if (!absl::IsNotFound(existing.status())) {
      return existing.status();
    }
    *agent.mutable_update_time() = now;
    return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(agent));
  }));
  if (on_register_) on_register_(agent);
  return agent;
}

absl::StatusOr<v1::Agent> AgentRegistryStore::Get(absl::string_view name) {
  RETURN_IF_ERROR(common::ValidateId("name", name));
  absl::StatusOr<std::string> raw = store_->Get(ColumnFamily::kA2A, keys::A2AAgent(name));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(absl::StrCat("agent ", name, " is not registered"));
  }
  RETURN_IF_ERROR(raw.status());
  v1::Agent agent;
  RETURN_IF_ERROR(DecodeRecord(*raw, &agent));
  return agent;
}

absl::StatusOr<v1::ListAgentsResponse> AgentRegistryStore::List(
    const v1::ListAgentsRequest& request) {
  ASSIGN_OR_RETURN(const int page_size,
                   ResolvePageSize(request.page_size(), kDefaultPageSize, kMaxPageSize));
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "agents", ""));
  const std::string prefix = keys::A2AAgentsPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(keys::A2AAgent(resume));
  v1::ListAgentsResponse response;
  for (; it->Valid(); it->Next()) {
    v1::Agent agent;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &agent));
    if (response.agents_size() == page_size) {
      response.set_next_page_token(EncodePageToken("agents", "", agent.name()));
      break;
    }
    *response.add_agents() = std::move(agent);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<AgentRegistryStore::NameSample> AgentRegistryStore::SampleNames(int max) {
  const std::string prefix = keys::A2AAgentsPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  NameSample sample;
  for (; it->Valid(); it->Next()) {
    if (static_cast<int>(sample.first.size()) < max) {
      v1::Agent agent;
      RETURN_IF_ERROR(DecodeRecord(it->value(), &agent));
      sample.first.push_back(agent.name());
    }
    ++sample.total;
  }
  RETURN_IF_ERROR(it->status());
  return sample;
}

absl::Status AgentRegistryStore::Delete(absl::string_view name) {
  RETURN_IF_ERROR(common::ValidateId("name", name));
  return store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    const std::string key = keys::A2AAgent(name);
    absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(existing.status())) {
      return absl::NotFoundError(absl::StrCat("agent ", name, " is not registered"));
    }
    RETURN_IF_ERROR(existing.status());
    return txn.Delete(ColumnFamily::kA2A, key);
  });
}

}  // namespace coordinator
