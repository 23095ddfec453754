// The shape of a work run: reading task-graph.json and checking that a run's items form a graph
// workers can finish (no cycle, no unknown dependency, no dependency on a higher level, no file
// owned by two items of one level). Every way of creating a run goes through these checks, so a
// run in the store is always a valid graph. Knows nothing of gRPC or of storage.
#ifndef COORDINATOR_STORE_WORK_TASK_GRAPH_H_
#define COORDINATOR_STORE_WORK_TASK_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/work.pb.h"
#include "google/protobuf/struct.pb.h"

namespace coordinator {

// Bounds on what one run may hold, so that hostile input gets a clear error instead of an
// unbounded record.
struct WorkLimits {
  // Items per run. Default 10000.
  size_t max_items = 10000;
  // Dependencies of one item. Default 1000.
  size_t max_dependencies = 1000;
  // Files of one item (create, modify, read and owned together). Default 1000.
  size_t max_files = 1000;
  // One file path, branch or worktree path, title. Default 4 KiB.
  size_t max_path_bytes = 4096;
  // Description, summary, error, checkpoint note, progress payload. Default 64 KiB.
  size_t max_text_bytes = 64 << 10;
  // Metadata of one item or run, serialized. Default 64 KiB.
  size_t max_metadata_bytes = 64 << 10;
  // The text of task-graph.json. Default 4 MiB.
  size_t max_graph_json_bytes = 4 << 20;
  // Highest level. Default 1000000.
  int64_t max_level = 1000000;
  // Runs or items per page of a listing; a larger page_size is lowered to this (default 1000;
  // the server sets it from --max_page_size).
  int max_page_size = 1000;
};

// A task graph parsed from task-graph.json, with the top-level fields the format does not name.
struct ParsedTaskGraph {
  v1::TaskGraph graph;
  google::protobuf::Struct metadata;
};

// Parses the text of task-graph.json with protobuf's JSON mapping. Task fields the format does
// not name are kept in each task's metadata, top-level ones in ParsedTaskGraph::metadata.
// INVALID_ARGUMENT for malformed JSON or a field of the wrong type; RESOURCE_EXHAUSTED when the
// text is larger than limits.max_graph_json_bytes.
[[nodiscard]] absl::StatusOr<ParsedTaskGraph> ParseTaskGraphJson(absl::string_view json,
                                                                 const WorkLimits& limits);

// The items of a run made from `graph`: one per task, owning its create and modify files.
std::vector<v1::WorkItem> TaskGraphToItems(const v1::TaskGraph& graph);

// Clears the output-only fields of `items`, fills owned_files (the given ones plus files.create
// and files.modify, sorted, without duplicates) and checks the graph. The error names the item
// and, for ownership, the file: INVALID_ARGUMENT for a duplicate id, an unknown dependency, a
// dependency on a higher level, a cycle, or a file owned twice at one level; RESOURCE_EXHAUSTED
// when a limit is exceeded.
//
// The first `existing` items are a run's stored items (AddItems): they are not changed, and
// take part only in the graph checks; an item with the id of one of them is ALREADY_EXISTS.
[[nodiscard]] absl::Status NormalizeAndValidateItems(std::vector<v1::WorkItem>* items,
                                                     const WorkLimits& limits, size_t existing = 0);

// Most capabilities an item may require or a worker may declare.
inline constexpr int kMaxCapabilities = 64;

// OK when `list` names at most kMaxCapabilities capabilities, each a valid identifier
// (common::ValidateId), none twice; the error names `field`.
[[nodiscard]] absl::Status ValidateCapabilities(
    absl::string_view field, const google::protobuf::RepeatedPtrField<std::string>& list);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_TASK_GRAPH_H_
