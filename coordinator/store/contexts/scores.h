// What an evaluation scored and which leaderboard groups it counts in: read from the labels the
// green agent stores on its context. Shared by the context store (which keeps the running totals
// of scores, records/tallies.h) and the web console (which shows them).
#ifndef COORDINATOR_STORE_CONTEXTS_SCORES_H_
#define COORDINATOR_STORE_CONTEXTS_SCORES_H_

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "coordinator/v1/context.pb.h"

namespace coordinator {

// The overall score of an evaluation: the "score" label the green agent stores, JSON whose
// "score" field is a number (green_agent/evaluation.cc, ScoreJson); nullopt when there is none.
std::optional<double> EvaluationScore(const v1::TaskContext& context);
// The leaderboard's groups of a context: its external task id ("(none)" without one) and its
// agent under test, the purple_agent label ("(unknown)" without one).
std::string ScoreTask(const v1::TaskContext& context);
std::string ScoreAgent(const v1::TaskContext& context);
// The group of Tally::kScoreByTaskAndAgent, and back. A task id has no control character, so the
// NUL between the two is unambiguous.
std::string TaskAndAgentGroup(absl::string_view task, absl::string_view agent);
std::pair<std::string, std::string> SplitTaskAndAgentGroup(absl::string_view group);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONTEXTS_SCORES_H_
