// Policies of the agent under test: given the conversation so far, the next action, as text
// ("execute: <command>" or "submit"). Three kinds, chosen by --policy:
//   script:<path>    a JSON list of actions, taken in order within each attempt (deterministic;
//                    for tests and demos). A folder holds one <task_id>/purple_script.json per
//                    task.
//   cmd:<program>    runs the program (its words split on blanks) with the request as JSON on
//                    stdin; its stdout, trimmed, is the action. Any model CLI plugs in here.
//   openai:<url>     an OpenAI-compatible POST <url>/v1/chat/completions; the model is the
//                    current tier's model of the retry ladder.
// Policies are stateless: everything they need is in the PolicyInput, which the agent rebuilds
// from the coordinator after a restart.
#ifndef PURPLE_AGENT_POLICY_H_
#define PURPLE_AGENT_POLICY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/url_allow_list.h"

namespace purple_agent {

struct Turn {
  // "user" (the task, observations), "assistant" (actions) or "system".
  std::string role;
  std::string text;
};

struct PolicyInput {
  std::string context_id;
  // The evaluation's task id (from the task's "Task ID:" line; "" when unknown).
  std::string task_id;
  // The current attempt: the task first, then its actions and observations.
  std::vector<Turn> turns;
  // Actions taken so far in this attempt.
  int step = 0;
  // Attempt number (1-based), tier and that tier's model.
  int attempt = 1;
  int tier = 1;
  std::string model;
  // GetFailureContext text of the earlier attempts ("" on the first).
  std::string failure_context;
};

struct PolicyOutput {
  std::string action;
  // Tokens the call used (estimated when the policy does not say).
  int64_t tokens = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  [[nodiscard]] virtual absl::StatusOr<PolicyOutput> Next(const PolicyInput& input) = 0;
};

struct PolicyOptions {
  // Deadline of one cmd: run or one HTTP call (default 120s).
  absl::Duration timeout = absl::Seconds(120);
  // Bearer token for openai: (default: $OPENAI_API_KEY).
  std::string api_key;
  // Hosts an openai: base URL may name (--model_allow_hosts; default loopback only).
  common::HostAllowList model_allow;
};

// Builds the policy named by `spec` (see above). INVALID_ARGUMENT for an unknown kind or a
// malformed openai: URL; PERMISSION_DENIED for an openai: host not in options.model_allow.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& spec,
                                                                 const PolicyOptions& options);

// The request a cmd: program gets on stdin (also the body the tests inspect).
std::string PolicyInputJson(const PolicyInput& input);

// Rough token count of a text (4 bytes a token) for policies that do not report usage.
int64_t EstimateTokens(const std::string& text);

}  // namespace purple_agent

#endif  // PURPLE_AGENT_POLICY_H_
