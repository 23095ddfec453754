// The coordinator's flags for limits on input (coordinator/store/records/limits.h) and on streams:
// one flag per limit, so an operator can tighten or loosen each without a rebuild. Defined apart
// from main.cc so the list stays in one place; only the coordinator binary links it.
#ifndef COORDINATOR_LIMIT_FLAGS_H_
#define COORDINATOR_LIMIT_FLAGS_H_

#include "absl/status/status.h"
#include "coordinator/server.h"

namespace coordinator {

// Copies the limit flags into `options`. INVALID_ARGUMENT naming the flag when one is not
// positive.
[[nodiscard]] absl::Status ApplyLimitFlags(ServerOptions* options);

}  // namespace coordinator

#endif  // COORDINATOR_LIMIT_FLAGS_H_
