// The scenario files of evaluation platforms (docs/scenarios.md): a [green_agent] table, one
// [[participants]] table per role, each with the agent's `endpoint` and an optional `cmd` that
// starts it, and a free-form [config] table handed to the green agent as it is.
#ifndef COORDCTL_SCENARIO_FILE_H_
#define COORDCTL_SCENARIO_FILE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"

namespace coordctl {

// Larger files are refused before they are parsed.
inline constexpr size_t kMaxScenarioBytes = 1 << 20;

// The green agent or a participant.
struct ScenarioAgent {
  // A participant's role (1 to 64 of [A-Za-z0-9_.-]); "green_agent" for the green agent.
  std::string role;
  // The agent's base URL as the file gives it: http:// or https://, a host and a port.
  std::string endpoint;
  std::string host;
  int port = 0;
  // The command that starts the agent, split as a POSIX shell splits words (quotes and
  // backslashes, no expansions); empty when something else starts it.
  std::vector<std::string> cmd;
  // Line of the agent's table in the file.
  int line = 0;
};

struct Scenario {
  ScenarioAgent green;
  std::vector<ScenarioAgent> participants;  // in the file's order
  // The [config] table (empty without one), every key kept.
  google::protobuf::Struct config;
};

// Reads a scenario file's text. INVALID_ARGUMENT, naming the line and what is wrong, for a file
// that is not TOML, lacks a table or a key, has an endpoint without a port, a role twice, two
// agents on one endpoint, or is over kMaxScenarioBytes.
[[nodiscard]] absl::StatusOr<Scenario> ParseScenario(absl::string_view text);

}  // namespace coordctl

#endif  // COORDCTL_SCENARIO_FILE_H_
