// libFuzzer harness for the seed-state importer: arbitrary bytes as an ARIA task-state file, as
// `coordctl import aria` reads it (coordctl/aria_state_json.h). A failure must be a clear
// INVALID_ARGUMENT; a state that parses must format back (as `coordctl task state` prints it)
// into a file that parses again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "coordctl/aria_state_json.h"
#include "google/protobuf/util/message_differencer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > coordctl::kMaxAriaStateFileBytes) return 0;  // the importer refuses these unread
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<coordinator::v1::TaskState> state = coordctl::ParseAriaStateJson(json);
  if (!state.ok()) {
    if (!absl::IsInvalidArgument(state.status())) {
      std::fprintf(stderr, "unexpected status %s\n", state.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  const std::string formatted = coordctl::FormatAriaStateJson(*state);
  absl::StatusOr<coordinator::v1::TaskState> again = coordctl::ParseAriaStateJson(formatted);
  if (!again.ok()) {
    std::fprintf(stderr, "formatted state does not parse: %s\n%s\n",
                 again.status().ToString().c_str(), formatted.c_str());
    std::abort();
  }
  return 0;
}
