// Assessment requests as evaluation platforms send them (AgentBeats style): a message whose data
// part, or whose text, is the JSON object
//   {"participants": {"<role>": "<agent card URL>", ...}, "config": {"task_ids": ["<id>", ...]}}
// The green agent evaluates the participant named by its --purple_role; config carries the task
// ids ("task_id": "<id>" is accepted for one, as in the older {"task_id": ...} request). This file
// only reads and checks the request; registering the participant and running the evaluations
// is green_agent.cc's.
#ifndef GREEN_AGENT_ASSESSMENT_H_
#define GREEN_AGENT_ASSESSMENT_H_

#include <optional>
#include <string>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace green_agent {

// Most task ids one assessment may name.
inline constexpr size_t kMaxAssessmentTasks = 64;

struct AssessmentRequest {
  // The participant under test: its role in `participants` and the URL of its agent card
  // (normalized by ParticipantCardUrl).
  std::string role;
  std::string card_url;
  // The tasks to evaluate, in the order given, each once.
  std::vector<std::string> task_ids;
};

// Finds an assessment request in `message`: the first data part holding an object with
// "participants" or "config", else the first text part that is such a JSON object. nullopt when
// there is none (the message may be one of the other requests). INVALID_ARGUMENT, with a message
// that says what is wrong, when there is one but it is malformed: participants missing or not an
// object of strings, no participant for `role`, a URL that is not http(s), config missing or of
// the wrong shape, an unknown field, a task id that cannot name a bundle.
[[nodiscard]] absl::StatusOr<std::optional<AssessmentRequest>> ParseAssessmentRequest(
    const lf::a2a::v1::Message& message, absl::string_view role);

// The card URL of a participant URL: http:// or https:// with a host, no spaces or control
// characters. A URL whose path ends in ".json" (or that has a query) is the card itself; any
// other is the agent's base URL and its card is at <base>/.well-known/agent-card.json, the A2A
// well-known location (platforms often pass the base URL). INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<std::string> ParticipantCardUrl(absl::string_view url);

// The name under which the green agent registers a participant that is not registered yet:
// "<role>-<first 12 hex digits of the SHA-256 of card_url>", the role lowercased with anything
// but [a-z0-9._-] turned into '-' and cut to 40 characters ("participant" when nothing is left).
// The same role and URL always give the same name, so registering again after a restart is a
// refresh, not a second agent.
std::string ParticipantAgentName(absl::string_view role, absl::string_view card_url);

}  // namespace green_agent

#endif  // GREEN_AGENT_ASSESSMENT_H_
