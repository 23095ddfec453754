// The agents of a platform scenario as `coordctl scenario run` handles them: started from the
// file's cmd in process groups of their own (or adopted from an earlier run), registered at the
// coordinator by their card URL once they serve it, and stopped at the end.
#ifndef COORDCTL_SCENARIO_AGENTS_H_
#define COORDCTL_SCENARIO_AGENTS_H_

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"
#include "coordctl/scenario_file.h"

namespace coordctl {

// One agent of the scenario as this run handles it.
struct ScenarioRunAgent {
  const ScenarioAgent* spec = nullptr;
  std::string name;      // at the coordinator: "<run id>.<role>"
  std::string card_url;  // the agent's own card
  std::string log_path;
  std::string pid_path;    // the process group of a started agent, for a later run to stop
  pid_t pgid = 0;          // started by this run, or adopted from the pid file of an earlier one
  bool ours = false;       // started by this process (a child: its exit can be seen)
  int max_in_flight = -1;  // registered with this max_in_flight; -1: leave the stored one
  std::unique_ptr<std::thread> tee;
};

// Whether something accepts TCP connections at the agent's host and port.
bool Listening(const ScenarioAgent& agent);

// <endpoint>/.well-known/agent-card.json.
std::string CardUrl(const std::string& endpoint);

// Starts the agent's cmd, its output appended to its log (and copied to `err` after its role,
// with `show_logs`); writes its process group to its pid file.
absl::Status StartAgent(ScenarioRunAgent& agent, bool show_logs, std::ostream* err,
                        absl::Mutex* err_mu);

// The process group an earlier run started for this agent (its pid file), if it still runs that
// command; 0 otherwise.
pid_t AdoptedGroup(const ScenarioRunAgent& agent);

// Registers the agent at the coordinator by its card URL once it serves the card, trying until
// `deadline`. FAILED_PRECONDITION when its cmd ended first (with the tail of its log),
// DEADLINE_EXCEEDED when it never served its card, PERMISSION_DENIED when the caller may not
// register it.
absl::Status RegisterWhenUp(const Env& env, ScenarioRunAgent& agent, absl::Time deadline);

// Stops the process groups started or adopted (SIGTERM, then SIGKILL after 5 s) and removes
// their pid files.
void StopAgents(std::vector<ScenarioRunAgent>& agents);

// Blocks until SIGINT or SIGTERM.
void WaitForStopSignal();

}  // namespace coordctl

#endif  // COORDCTL_SCENARIO_AGENTS_H_
