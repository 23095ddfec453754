// Which agent an A2A request is for. The request's `tenant` names the agent; the A2A
// specification makes `tenant` optional, so a generic client sends none, and the gateway then
// picks the agent: --default_agent when it is set, else the only registered agent. Shared by
// every A2A binding (gRPC here, JSON-RPC and HTTP+JSON), so one request reaches the same agent
// through each.
#ifndef COORDINATOR_A2A_TENANT_ROUTING_H_
#define COORDINATOR_A2A_TENANT_ROUTING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/a2a/agent_registry.h"

namespace coordinator {

// Registered agents an error message lists at most, before "and N more".
inline constexpr int kMaxListedAgents = 20;

// The name of the agent a request for a new task goes to:
// - `tenant` set: that agent. INVALID_ARGUMENT when it is not a valid name (empty is handled
//   below; over 256 bytes, control characters, invalid UTF-8), NOT_FOUND when no agent of that
//   name is registered.
// - `tenant` empty and `default_agent` set (--default_agent): that agent; NOT_FOUND naming it
//   and the flag when it is not registered (yet: it may register later).
// - `tenant` empty, no default, exactly one agent registered: that one.
// - Otherwise INVALID_ARGUMENT listing the registered agents (at most kMaxListedAgents, then
//   "and N more") and how to choose one: set `tenant`, or start the coordinator with
//   --default_agent. With no agent registered at all, FAILED_PRECONDITION: no request can
//   succeed until one registers.
// Reads only; changes nothing.
[[nodiscard]] absl::StatusOr<std::string> ResolveTenant(AgentRegistryStore* agents,
                                                        absl::string_view default_agent,
                                                        absl::string_view tenant);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_TENANT_ROUTING_H_
