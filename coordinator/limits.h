// Per-record limits on what a request may store. The whole request is bounded by the server's
// --max_request_bytes; these bound the parts so that no single record grows without limit.
#ifndef COORDINATOR_LIMITS_H_
#define COORDINATOR_LIMITS_H_

#include <cstddef>

namespace coordinator {

struct Limits {
  // Path-like and free-text context fields (workspace_dir, shared_dir, ...). Default 4 KiB.
  size_t max_field_bytes = 4096;
  // Labels per context. Default 64.
  size_t max_labels = 64;
  // One label value. Default 4 KiB.
  size_t max_label_value_bytes = 4096;
  // One recorded command line. Default 64 KiB.
  size_t max_command_bytes = 64 << 10;
  // One conversation message. Default 1 MiB.
  size_t max_message_bytes = 1 << 20;
};

}  // namespace coordinator

#endif  // COORDINATOR_LIMITS_H_
