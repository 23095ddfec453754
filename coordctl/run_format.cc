#include "coordctl/run_format.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace coordctl {

std::string Lower(absl::string_view name, absl::string_view prefix) {
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}
std::string ItemStatusName(coordinator::v1::ItemStatus s) {
  return Lower(coordinator::v1::ItemStatus_Name(s), "ITEM_STATUS_");
}
std::string RunStatusName(coordinator::v1::RunStatus s) {
  return Lower(coordinator::v1::RunStatus_Name(s), "RUN_STATUS_");
}
std::string LevelStatusName(coordinator::v1::LevelStatus s) {
  return Lower(coordinator::v1::LevelStatus_Name(s), "LEVEL_STATUS_");
}
std::string WorkerStatusName(coordinator::v1::WorkerStatus s) {
  return Lower(coordinator::v1::WorkerStatus_Name(s), "WORKER_STATUS_");
}
std::string EventKindName(coordinator::v1::WorkEvent::Kind k) {
  return Lower(coordinator::v1::WorkEvent::Kind_Name(k), "KIND_");
}
std::string RunKindName(coordinator::v1::RunKind k) {
  return absl::StrReplaceAll(Lower(coordinator::v1::RunKind_Name(k), "RUN_KIND_"), {{"_", "-"}});
}

std::string FormatTime(const google::protobuf::Timestamp& ts) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

google::protobuf::Duration ToProto(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  out.set_seconds(nanos / 1000000000);
  out.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return out;
}

absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

std::string Cell(absl::string_view text, size_t max) {
  std::string line = absl::StrReplaceAll(text, {{"\n", " "}, {"\t", " "}, {"\r", " "}});
  if (line.size() > max) line = absl::StrCat(line.substr(0, max - 3), "...");
  return line.empty() ? "-" : line;
}

absl::StatusOr<absl::Duration> TtlArg(const ParsedArgs& args, const char* fallback) {
  return ParseDurationArg("ttl", args.get("ttl", fallback));
}

}  // namespace coordctl
