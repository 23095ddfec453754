#include "coordinator/a2a/tenant_routing.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/validation.h"

namespace coordinator {
namespace {

// Bytes of agent names an error message lists at most: a gRPC client refuses trailers over its
// metadata limit (8 KiB by default), and names are up to 256 bytes each.
constexpr size_t kMaxListedBytes = 1024;

// "a, b and 3 more": the names that fit kMaxListedAgents and kMaxListedBytes, then the count of
// the rest.
std::string ListNames(const AgentRegistryStore::NameSample& sample) {
  std::vector<std::string> shown;
  size_t bytes = 0;
  for (const std::string& name : sample.first) {
    if (static_cast<int>(shown.size()) >= kMaxListedAgents) break;
    if (!shown.empty() && bytes + name.size() > kMaxListedBytes) break;
    bytes += name.size();
    shown.push_back(name);
  }
  std::string list = absl::StrJoin(shown, ", ");
  const int64_t rest = sample.total - static_cast<int64_t>(shown.size());
  if (rest > 0) absl::StrAppend(&list, " and ", rest, " more");
  return list;
}

}  // namespace

absl::StatusOr<std::string> ResolveTenant(AgentRegistryStore* agents,
                                          absl::string_view default_agent,
                                          absl::string_view tenant) {
  if (!tenant.empty()) {
    RETURN_IF_ERROR(common::ValidateId("tenant", tenant));
    ASSIGN_OR_RETURN(v1::Agent agent, agents->Get(tenant));
    return std::move(*agent.mutable_name());
  }
  if (!default_agent.empty()) {
    absl::StatusOr<v1::Agent> agent = agents->Get(default_agent);
    if (absl::IsNotFound(agent.status())) {
      return absl::NotFoundError(
          absl::StrCat("the request names no agent (tenant is empty), and the default agent ",
                       default_agent, " (--default_agent) is not registered"));
    }
    RETURN_IF_ERROR(agent.status());
    return std::move(*agent->mutable_name());
  }
  ASSIGN_OR_RETURN(AgentRegistryStore::NameSample sample, agents->SampleNames(kMaxListedAgents));
  if (sample.total == 1) return std::move(sample.first.front());
  if (sample.total == 0) {
    return absl::FailedPreconditionError(
        "the request names no agent (tenant is empty), and no agent is registered: register one "
        "(coordctl agent register <name> <host:port>), then set tenant to its name");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the request names no agent (tenant is empty), and ", sample.total,
      " agents are registered: ", ListNames(sample),
      ". Set tenant to the name of one, or start the coordinator with --default_agent=<name>"));
}

}  // namespace coordinator
