#include "a2a_protocol/scenario_run.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace a2a_protocol {
namespace {

namespace a2apb = ::lf::a2a::v1;

constexpr absl::string_view kContextStem = "scenario-";
// A text part longer than this is not read as JSON for a score (a result file is small; a log
// is not a result).
constexpr size_t kMaxScoredText = 1 << 20;

std::optional<double> ScoreField(const google::protobuf::Value& value) {
  if (!value.has_struct_value()) return std::nullopt;
  const auto& fields = value.struct_value().fields();
  auto it = fields.find("score");
  if (it == fields.end() || !it->second.has_number_value() ||
      !std::isfinite(it->second.number_value())) {
    return std::nullopt;
  }
  return it->second.number_value();
}

std::optional<double> ArtifactScore(const a2apb::Artifact& artifact) {
  for (const a2apb::Part& part : artifact.parts()) {
    if (part.has_data()) {
      if (std::optional<double> score = ScoreField(part.data())) return score;
      continue;
    }
    if (part.text().empty() || part.text().size() > kMaxScoredText) continue;
    const absl::string_view text = absl::StripAsciiWhitespace(part.text());
    if (!absl::StartsWith(text, "{")) continue;
    google::protobuf::Value parsed;
    if (!google::protobuf::util::JsonStringToMessage(std::string(text), &parsed).ok()) continue;
    if (std::optional<double> score = ScoreField(parsed)) return score;
  }
  return std::nullopt;
}

}  // namespace

bool ValidScenarioRunId(absl::string_view run_id) {
  if (run_id.empty() || run_id.size() > 64) return false;
  for (char c : run_id) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string ScenarioAgentName(absl::string_view run_id, absl::string_view role) {
  return absl::StrCat(run_id, ".", role);
}

std::optional<std::string> ScenarioRunOfGreenAgent(absl::string_view agent_name) {
  absl::string_view run = agent_name;
  if (!absl::ConsumeSuffix(&run, kScenarioGreenRole) || !absl::ConsumeSuffix(&run, ".") ||
      !ValidScenarioRunId(run)) {
    return std::nullopt;
  }
  return std::string(run);
}

std::string ScenarioContext(absl::string_view run_id) { return absl::StrCat(kContextStem, run_id); }

std::string ScenarioAssessmentContext(absl::string_view run_id, int shard, int repeat) {
  return absl::StrCat(kContextStem, run_id, "-s", shard, "-r", repeat);
}

bool InScenarioRun(absl::string_view context_id, absl::string_view run_id) {
  if (!absl::ConsumePrefix(&context_id, kContextStem) ||
      !absl::ConsumePrefix(&context_id, run_id)) {
    return false;
  }
  return context_id.empty() || absl::StartsWith(context_id, "-s");
}

std::optional<double> AssessmentScore(const a2apb::Task& task) {
  std::optional<double> last;
  for (const a2apb::Artifact& artifact : task.artifacts()) {
    std::optional<double> score = ArtifactScore(artifact);
    if (!score.has_value()) continue;
    if (artifact.artifact_id() == "score" || artifact.name() == "score") return score;
    last = score;
  }
  return last;
}

}  // namespace a2a_protocol
