// Per-record limits on what a request may store. The whole request is bounded by the server's
// --max_request_bytes; these bound the parts so that no single record grows without limit. Each
// one is a coordinator flag of the same name (coordinator/main.cc), and a request over a limit
// gets RESOURCE_EXHAUSTED naming the limit and that flag, with nothing written.
#ifndef COORDINATOR_STORE_RECORDS_LIMITS_H_
#define COORDINATOR_STORE_RECORDS_LIMITS_H_

#include <cstddef>

namespace coordinator {

struct Limits {
  // Path-like and free-text context fields (workspace_dir, shared_dir, ...), command output
  // digests, push-config tokens. Default 4 KiB (--max_field_bytes).
  size_t max_field_bytes = 4096;
  // Labels per context. Default 64 (--max_labels).
  size_t max_labels = 64;
  // One label value. Default 4 KiB (--max_label_value_bytes).
  size_t max_label_value_bytes = 4096;
  // One recorded command line. Default 64 KiB (--max_command_bytes).
  size_t max_command_bytes = 64 << 10;
  // One conversation message, and one A2A message. Default 1 MiB (--max_message_bytes).
  size_t max_message_bytes = 1 << 20;
  // Records per page of the coordinator.v1 listings (contexts, commands, conversations, ...).
  // A larger page_size is lowered to this (as AIP-158 asks), never refused, so a client that
  // asks for big pages keeps working when an operator lowers it; a negative one is
  // INVALID_ARGUMENT. Default 1000 (--max_page_size).
  int max_page_size = 1000;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_LIMITS_H_
