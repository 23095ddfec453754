// Helpers for the tests of coordctl's state-file imports (arial_state, mahabharatha_state).
#ifndef COORDCTL_IMPORT_TEST_UTIL_H_
#define COORDCTL_IMPORT_TEST_UTIL_H_

#include <utility>
#include <vector>

#include "coordinator/v1/work.pb.h"

namespace coordctl {

// What the coordinator answers for a run created from an import and not changed since: the run
// and items as created (run id "r1", version 1), with the times it stamps (2026-01-01).
inline std::pair<coordinator::v1::Run, std::vector<coordinator::v1::WorkItem>> AsCreated(
    coordinator::v1::Run run, std::vector<coordinator::v1::WorkItem> items) {
  run.set_run_id("r1");
  run.mutable_create_time()->set_seconds(1767225600);
  *run.mutable_update_time() = run.create_time();
  for (coordinator::v1::WorkItem& item : items) {
    item.set_version(1);
    *item.mutable_update_time() = run.create_time();
  }
  return {std::move(run), std::move(items)};
}

}  // namespace coordctl

#endif  // COORDCTL_IMPORT_TEST_UTIL_H_
