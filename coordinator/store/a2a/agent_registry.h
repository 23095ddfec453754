// Domain logic of the A2A agent registry: which agents sit behind the gateway, where they
// listen and over which A2A binding, and the card each registered (or that was fetched from its
// card URL by coordinator/a2a/card_fetch.h). Stored in the kA2A family; knows nothing of gRPC.
#ifndef COORDINATOR_STORE_A2A_AGENT_REGISTRY_H_
#define COORDINATOR_STORE_A2A_AGENT_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/v1/agent_registry.pb.h"
#include "storage/store.h"

namespace coordinator {

class AgentRegistryStore {
 public:
  explicit AgentRegistryStore(storage::Store* store) : store_(store) {}

  // Adds the agent, or replaces the endpoint, binding, card and card URL of one already
  // registered (an agent that restarted on another port). Keeps the first create_time. An empty
  // protocol_binding is stored as "GRPC"; the endpoint must suit the binding
  // (ValidateBindingEndpoint) and a card_url must be an http(s) URL (INVALID_ARGUMENT).
  [[nodiscard]] absl::StatusOr<v1::Agent> Register(const v1::Agent& agent);
  [[nodiscard]] absl::StatusOr<v1::Agent> Get(absl::string_view name);
  [[nodiscard]] absl::StatusOr<v1::ListAgentsResponse> List(const v1::ListAgentsRequest& request);
  [[nodiscard]] absl::Status Delete(absl::string_view name);

  // The names of the first `max` agents (in key order) and how many are registered in all (one scan
  // of the registry's keys; only the first `max` values are decoded).
  struct NameSample {
    std::vector<std::string> first;
    int64_t total = 0;
  };
  [[nodiscard]] absl::StatusOr<NameSample> SampleNames(int max);

  // Called after every successful Register (the gateway retries queued deliveries at once).
  void set_on_register(std::function<void(const v1::Agent&)> fn) { on_register_ = std::move(fn); }

 private:
  storage::Store* store_;  // not owned
  std::function<void(const v1::Agent&)> on_register_;
};

// OK when `endpoint` looks like host:port with a port in 1..65535.
[[nodiscard]] absl::Status ValidateEndpoint(absl::string_view endpoint);

// OK when `endpoint` suits `binding`: for "GRPC" host:port (plaintext) or https://host[:port]
// (TLS); for "JSONRPC" and "HTTP+JSON" an http(s) URL. INVALID_ARGUMENT otherwise, and for any
// other binding.
[[nodiscard]] absl::Status ValidateBindingEndpoint(absl::string_view binding,
                                                   absl::string_view endpoint);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_AGENT_REGISTRY_H_
