// libFuzzer harness for the task-graph importer (coordinator/store/work/task_graph.h): arbitrary
// bytes as the text of task-graph.json, parsed, turned into a run's items and validated, as
// WorkService.ImportTaskGraph and `coordctl run import` do. Every failure must be a clear
// INVALID_ARGUMENT or RESOURCE_EXHAUSTED; a graph that validates must validate again unchanged
// (normalisation is idempotent).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/work/task_graph.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

void CheckError(const absl::Status& s, const char* what) {
  if (s.ok() || absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s)) return;
  std::fprintf(stderr, "%s: unexpected status %s\n", what, s.ToString().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  coordinator::WorkLimits limits;
  // Small limits, so the fuzzer reaches them with small inputs.
  limits.max_items = 64;
  limits.max_dependencies = 16;
  limits.max_files = 16;
  limits.max_path_bytes = 256;
  limits.max_text_bytes = 1024;
  limits.max_metadata_bytes = 1024;
  limits.max_graph_json_bytes = 64 << 10;
  limits.max_level = 1000;
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<coordinator::ParsedTaskGraph> parsed =
      coordinator::ParseTaskGraphJson(json, limits);
  CheckError(parsed.status(), "ParseTaskGraphJson");
  if (!parsed.ok()) return 0;
  std::vector<coordinator::v1::WorkItem> items = coordinator::TaskGraphToItems(parsed->graph);
  const absl::Status valid = coordinator::NormalizeAndValidateItems(&items, limits);
  CheckError(valid, "NormalizeAndValidateItems");
  if (!valid.ok()) return 0;
  std::vector<coordinator::v1::WorkItem> again = items;
  if (!coordinator::NormalizeAndValidateItems(&again, limits).ok()) {
    std::fprintf(stderr, "a validated graph does not validate again\n");
    std::abort();
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (!google::protobuf::util::MessageDifferencer::Equals(items[i], again[i])) {
      std::fprintf(stderr, "normalising twice changed item %zu\n", i);
      std::abort();
    }
  }
  return 0;
}
