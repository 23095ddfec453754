// Pieces the `coordctl run ...` commands share: status and kind names as lower-case words,
// times and durations, table cells, and the options every lease command reads.
#ifndef COORDCTL_RUN_FORMAT_H_
#define COORDCTL_RUN_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"
#include "coordinator/v1/work.pb.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace coordctl {

// "done" for ITEM_STATUS_DONE, and so on: the enum value's name after `prefix`, lower-case.
std::string Lower(absl::string_view name, absl::string_view prefix);
std::string ItemStatusName(coordinator::v1::ItemStatus s);
std::string RunStatusName(coordinator::v1::RunStatus s);
std::string LevelStatusName(coordinator::v1::LevelStatus s);
std::string WorkerStatusName(coordinator::v1::WorkerStatus s);
std::string EventKindName(coordinator::v1::WorkEvent::Kind k);
// "task-graph" for RUN_KIND_TASK_GRAPH.
std::string RunKindName(coordinator::v1::RunKind k);

// 2026-01-01T00:00:00Z (whole seconds, UTC).
std::string FormatTime(const google::protobuf::Timestamp& ts);
google::protobuf::Duration ToProto(absl::Duration d);
absl::Duration FromProto(const google::protobuf::Duration& d);

// One line of free text for a table cell: line breaks and tabs as blanks, at most `max`
// characters (the end cut to "..."), "-" when empty.
std::string Cell(absl::string_view text, size_t max = 80);

// --capability NAME, repeated: what the worker declares when it claims.
template <typename Repeated>
void AddCapabilities(const ParsedArgs& args, Repeated* capabilities) {
  if (auto it = args.options.find("capability"); it != args.options.end()) {
    for (const std::string& name : it->second) *capabilities->Add() = name;
  }
}

// --ttl, or `fallback`.
absl::StatusOr<absl::Duration> TtlArg(const ParsedArgs& args, const char* fallback);

}  // namespace coordctl

#endif  // COORDCTL_RUN_FORMAT_H_
