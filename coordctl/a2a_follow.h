// Following an A2A task through the coordinator until it ends (coordctl send --wait, watch,
// scenario run).
#ifndef COORDCTL_A2A_FOLLOW_H_
#define COORDCTL_A2A_FOLLOW_H_

#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"

namespace coordctl {

// Whether a task in `state` has ended (COMPLETED, FAILED, CANCELED or REJECTED).
bool TaskEnded(lf::a2a::v1::TaskState state);

// "COMPLETED" for TASK_STATE_COMPLETED.
std::string TaskStateWord(lf::a2a::v1::TaskState state);

// Polls the task until it ends (or `for_at_most` passes) and prints a line per change, then its
// artifacts (`json`: the ended task as JSON instead). Survives a coordinator restart:
// unreachable calls are retried until the time is up. Exit 0 when the task COMPLETED, 1 when it
// ended otherwise; `ended`, when given, receives the ended task.
int FollowTask(const Env& env, const std::string& task_id, absl::Duration for_at_most, bool json,
               lf::a2a::v1::Task* ended = nullptr);

}  // namespace coordctl

#endif  // COORDCTL_A2A_FOLLOW_H_
