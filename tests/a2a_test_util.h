// Helpers for tests that speak A2A over gRPC.
#ifndef TESTS_A2A_TEST_UTIL_H_
#define TESTS_A2A_TEST_UTIL_H_

#include "a2a/v1/a2a.pb.h"

namespace testing_util {

// Reads a SendStreamingMessage or SubscribeToTask stream until the server ends it and returns
// the task state it last announced (a status update or a task snapshot; UNSPECIFIED when none).
// The caller reads the stream's status with Finish.
template <typename Reader>
::lf::a2a::v1::TaskState ReadToEndForLastState(Reader& reader) {
  ::lf::a2a::v1::TaskState last = ::lf::a2a::v1::TASK_STATE_UNSPECIFIED;
  ::lf::a2a::v1::StreamResponse response;
  while (reader.Read(&response)) {
    if (response.has_status_update()) last = response.status_update().status().state();
    if (response.has_task()) last = response.task().status().state();
  }
  return last;
}

}  // namespace testing_util

#endif  // TESTS_A2A_TEST_UTIL_H_
