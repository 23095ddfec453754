#include "coordinator/limit_flags.h"

#include <cstdint>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(int64_t, max_field_bytes, 4096,
          "longest context path/handle field, command output digest or push-config token, in "
          "bytes; longer ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_labels, 64, "labels per context; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_label_value_bytes, 4096,
          "longest context label value, in bytes; longer ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_command_bytes, 64 << 10,
          "longest recorded command line, in bytes; longer ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_message_bytes, 1 << 20,
          "largest conversation message text or A2A message, in bytes; larger ones get "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_page_size, 1000,
          "most records in one page of a coordinator.v1 listing (contexts, commands, "
          "conversations, tasks, breaker log, runs, items); a larger page_size is lowered to it");

ABSL_FLAG(int64_t, max_streams, coordinator::kDefaultMaxStreams,
          "streams open at once (A2A SendStreamingMessage and SubscribeToTask, WatchRun); one "
          "more gets RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, stream_queue_limit, coordinator::kDefaultStreamQueueLimit,
          "events one stream may hold unsent for a slow client before it is closed with "
          "RESOURCE_EXHAUSTED (the client subscribes again; nothing is lost)");

namespace coordinator {
namespace {

// The flag's value when it is between 1 and `max`; INVALID_ARGUMENT naming it otherwise.
absl::Status Positive(const char* name, int64_t value, int64_t max, int64_t* out) {
  if (value < 1 || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be between 1 and ", max, ", not ", value));
  }
  *out = value;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyLimitFlags(ServerOptions* options) {
  constexpr int64_t kMaxBytes = int64_t{1} << 30;  // nothing is stored whole beyond 1 GiB
  struct SizeFlag {
    const char* name;
    int64_t value;
    size_t* target;
  };
  Limits& limits = options->limits;
  const SizeFlag sizes[] = {
      {"max_field_bytes", absl::GetFlag(FLAGS_max_field_bytes), &limits.max_field_bytes},
      {"max_labels", absl::GetFlag(FLAGS_max_labels), &limits.max_labels},
      {"max_label_value_bytes", absl::GetFlag(FLAGS_max_label_value_bytes),
       &limits.max_label_value_bytes},
      {"max_command_bytes", absl::GetFlag(FLAGS_max_command_bytes), &limits.max_command_bytes},
      {"max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), &limits.max_message_bytes},
  };
  for (const SizeFlag& flag : sizes) {
    int64_t value = 0;
    if (absl::Status s = Positive(flag.name, flag.value, kMaxBytes, &value); !s.ok()) return s;
    *flag.target = static_cast<size_t>(value);
  }
  int64_t page_size = 0;
  if (absl::Status s =
          Positive("max_page_size", absl::GetFlag(FLAGS_max_page_size), 1000000, &page_size);
      !s.ok()) {
    return s;
  }
  limits.max_page_size = static_cast<int>(page_size);
  int64_t value = 0;
  if (absl::Status s = Positive("max_streams", absl::GetFlag(FLAGS_max_streams), 1000000, &value);
      !s.ok()) {
    return s;
  }
  options->max_streams = static_cast<int>(value);
  if (absl::Status s =
          Positive("stream_queue_limit", absl::GetFlag(FLAGS_stream_queue_limit), 1000000, &value);
      !s.ok()) {
    return s;
  }
  options->stream_queue_limit = static_cast<int>(value);
  return absl::OkStatus();
}

}  // namespace coordinator
