// The names a platform scenario run (coordctl scenario run, docs/scenarios.md) gives what it makes
// at the coordinator, and the score one of its assessments reports. coordctl makes the names; the
// console reads them back to group its leaderboard by run. They are the whole contract between
// the two: a run is its green agent registered as "<run>.green_agent", its participants as
// "<run>.<role>", and its assessments are that green agent's tasks in the contexts
// "scenario-<run>" (one assessment) or "scenario-<run>-s<shard>-r<repeat>" (several).
#ifndef A2A_PROTOCOL_SCENARIO_RUN_H_
#define A2A_PROTOCOL_SCENARIO_RUN_H_

#include <optional>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/strings/string_view.h"

namespace a2a_protocol {

// The green agent's role, the last part of its registered name.
inline constexpr absl::string_view kScenarioGreenRole = "green_agent";

// 1 to 64 letters, digits, '-', '_' or '.'.
bool ValidScenarioRunId(absl::string_view run_id);
// "<run>.<role>": the name an agent of the run is registered under.
std::string ScenarioAgentName(absl::string_view run_id, absl::string_view role);
// The run whose green agent is registered as `agent_name`, or nullopt for any other agent.
std::optional<std::string> ScenarioRunOfGreenAgent(absl::string_view agent_name);
// "scenario-<run>": the context of a run's only assessment, and the stem of the others'.
std::string ScenarioContext(absl::string_view run_id);
// "scenario-<run>-s<shard>-r<repeat>".
std::string ScenarioAssessmentContext(absl::string_view run_id, int shard, int repeat);
// Whether `context_id` is one of the run's assessment contexts.
bool InScenarioRun(absl::string_view context_id, absl::string_view run_id);

// The score an assessment reports: the number "score" at the top of a JSON object in its
// artifacts (a data part, or a text part holding JSON), taken from the artifact whose id or name is
// "score" when there is one, else from the last artifact that has one (results come last; our
// green agent sends a score per task and then the mean as "score"). nullopt when no artifact has
// one, or the number is not finite.
std::optional<double> AssessmentScore(const lf::a2a::v1::Task& task);

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_SCENARIO_RUN_H_
