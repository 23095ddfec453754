// ExportContext: everything stored about one evaluation, read from one snapshot of the
// database so that the parts agree with each other (command_count equals the commands listed,
// the A2A events match the task status) whatever is written meanwhile. It reuses the domain
// stores' own read paths on the snapshot. Knows nothing of gRPC.
#ifndef COORDINATOR_STORE_EXPORTER_H_
#define COORDINATOR_STORE_EXPORTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/store/retry/breaker.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/v1/admin.pb.h"
#include "storage/store.h"

namespace coordinator {

// Retry task ids a request may add to the default one.
inline constexpr int kMaxExportRetryTaskIds = 16;
// Largest export served (bytes); a bigger evaluation gets RESOURCE_EXHAUSTED.
inline constexpr size_t kMaxExportBytes = 64 << 20;

// The retry task the purple agent keeps for an evaluation: the task of description
// "rca-eval <context_id>" (purple_agent/purple_agent.cc).
std::string EvaluationRetryTaskId(absl::string_view context_id);

class Exporter {
 public:
  Exporter(storage::Store* store, Limits limits, TaskStateOptions task_state,
           BreakerOptions breaker)
      : store_(store), limits_(limits), task_state_(std::move(task_state)), breaker_(breaker) {}

  // NOT_FOUND when the context id has no context, no conversation and no A2A task. A scoped
  // `access` (an agent) gets only the A2A tasks it sees and the retry tasks it owns; whether it
  // may read the context at all is the caller's check, on the export's own context.
  [[nodiscard]] absl::StatusOr<v1::ContextExport> Export(const v1::ExportContextRequest& request,
                                                         const Access& access = {});

 private:
  storage::Store* store_;  // not owned
  const Limits limits_;
  const TaskStateOptions task_state_;
  const BreakerOptions breaker_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_EXPORTER_H_
