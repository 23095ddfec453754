#include "coordinator/store/work/run_rules.h"

namespace coordinator {

v1::RunStatus DeriveRunStatus(const v1::Run& run) {
  const v1::ItemCounts& c = run.counts();
  if (c.total() > 0 && c.done() == c.total()) return v1::RUN_STATUS_COMPLETED;
  if (c.failed() > 0) return v1::RUN_STATUS_FAILED;
  if (c.running() > 0) return v1::RUN_STATUS_RUNNING;
  if (c.blocked() > 0) return v1::RUN_STATUS_BLOCKED;
  if (run.claim_count() == 0) return v1::RUN_STATUS_PLANNING;
  return v1::RUN_STATUS_PENDING;
}

bool IsTerminalRun(const v1::Run& run) {
  if (run.status() == v1::RUN_STATUS_COMPLETED) return true;
  return run.status() == v1::RUN_STATUS_FAILED && run.counts().pending() == 0 &&
         run.counts().running() == 0;
}

}  // namespace coordinator
