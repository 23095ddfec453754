#include "coordinator/store/contexts/scores.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordinator {

std::optional<double> EvaluationScore(const v1::TaskContext& context) {
  auto it = context.labels().find("score");
  if (it == context.labels().end()) return std::nullopt;
  google::protobuf::Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(it->second, &parsed).ok()) return std::nullopt;
  auto field = parsed.fields().find("score");
  if (field == parsed.fields().end() || !field->second.has_number_value()) return std::nullopt;
  return field->second.number_value();
}

std::string ScoreTask(const v1::TaskContext& context) {
  return context.external_task_id().empty() ? "(none)" : context.external_task_id();
}

std::string ScoreAgent(const v1::TaskContext& context) {
  auto it = context.labels().find("purple_agent");
  return it == context.labels().end() || it->second.empty() ? "(unknown)" : it->second;
}

std::string TaskAndAgentGroup(absl::string_view task, absl::string_view agent) {
  return absl::StrCat(task, absl::string_view("\0", 1), agent);
}

std::pair<std::string, std::string> SplitTaskAndAgentGroup(absl::string_view group) {
  const size_t nul = group.find('\0');
  if (nul == absl::string_view::npos) return {std::string(group), ""};
  return {std::string(group.substr(0, nul)), std::string(group.substr(nul + 1))};
}

}  // namespace coordinator
