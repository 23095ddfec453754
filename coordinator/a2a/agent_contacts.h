// What the gateway has observed of each agent's reachability: the outcome and time of its last
// call to the agent (a delivery, a task read back or a cancel forwarded, the card fetched at
// registration, or a probe), and when the agent last answered. The web console's overview shows
// it instead of guessing from the delivery queue. Memory only: it is what this process saw since
// it started; an agent not called since is "unknown" until its first call or probe.
//
// A probe is one cheap call over the agent's own binding (transport and endpoint, as deliveries
// use them): GetTask of an id the agent never gave out. Any A2A answer, "task not found"
// included, shows the agent is there; no answer (unreachable, the deadline, a reply that is not
// A2A) shows it is not. Probes are asked for by readers (ProbeIfStale) and bounded: at most one in
// flight per agent, none while the last evidence is younger than probe_interval (the result is
// the cache), at most max_probes_in_flight at once, each under its own deadline, on the contacts'
// own threads.
#ifndef COORDINATOR_A2A_AGENT_CONTACTS_H_
#define COORDINATOR_A2A_AGENT_CONTACTS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/thread_pool.h"
#include "coordinator/v1/agent_registry.pb.h"

namespace coordinator {

// What is known of one agent.
struct AgentContact {
  // The last call: when (InfinitePast: none since start), what it was ("delivery", "read back",
  // "cancel", "card", "probe"), whether it reached the agent, and the error when it did not.
  absl::Time last_call = absl::InfinitePast();
  std::string via;
  bool reached = false;
  std::string error;
  // When the agent last answered a call (InfinitePast: not since start).
  absl::Time last_seen = absl::InfinitePast();
  // A probe of it is queued or running.
  bool probing = false;
};

struct AgentContactsOptions {
  // A reader's ProbeIfStale probes an agent whose last call is older than this (default 30s).
  absl::Duration probe_interval = absl::Seconds(30);
  // Deadline of one probe (default 5s).
  absl::Duration probe_timeout = absl::Seconds(5);
  // Threads that run probes (default 2) and probes queued or running at most (default 16; more
  // wait for a later ProbeIfStale).
  int probe_threads = 2;
  int max_probes_in_flight = 16;
};

class AgentContacts {
 public:
  // How one call to an agent went: whether the agent answered, and why not.
  struct Outcome {
    bool reached = false;
    std::string error;
  };
  // Calls `agent` once, blocking until it answers or `deadline`, and says how it went (a call
  // that could not be made at all, for want of a transport or an allowed host, did not reach it).
  using ProbeCall = std::function<Outcome(const v1::Agent& agent, absl::Time deadline)>;

  AgentContacts(ProbeCall probe, AgentContactsOptions options = {});
  // Waits for the probes in flight (each ends by its deadline).
  ~AgentContacts();
  AgentContacts(const AgentContacts&) = delete;
  AgentContacts& operator=(const AgentContacts&) = delete;

  // Whether the status a call to an agent ended with shows that the agent answered: OK or any
  // error of the agent's own. UNAVAILABLE (not reached, or the connection broke),
  // DEADLINE_EXCEEDED, CANCELLED and an answer that is not A2A (INVALID_AGENT_RESPONSE) do not.
  static bool Answered(const absl::Status& status);
  // The outcome of a call that ended with `status`.
  static Outcome OutcomeOf(const absl::Status& status) {
    return Outcome{Answered(status), status.ok() ? "" : std::string(status.message())};
  }

  // Records a call to `agent` made now: `reached` whether the agent answered, `error` why not.
  void Record(const std::string& agent, absl::string_view via, bool reached,
              absl::string_view error);
  // Records a call by the status it ended with (Answered).
  void RecordCall(const std::string& agent, absl::string_view via, const absl::Status& status) {
    Record(agent, via, Answered(status), status.ok() ? "" : status.message());
  }

  // What is known of `agent` (all defaults when nothing).
  AgentContact Get(const std::string& agent);

  // Queues a probe of `agent` unless one is queued or running, its last call is younger than
  // probe_interval, max_probes_in_flight are out, or the contacts are stopping, and returns what
  // was known of it then (`probing` set when a probe is queued or running). Quick: the probe runs
  // on the contacts' threads, so a Get after this call may already see its outcome; a reader that
  // shows "unknown, probing" uses the returned snapshot.
  AgentContact ProbeIfStale(const v1::Agent& agent);

  // Called with the agent's name when what is known of it changes in a way a reader shows: its
  // first call, reached turning into not reached or back, a probe starting or ending. On the
  // calling thread, outside the lock: it must be quick (the web console's feed). Set before the
  // first Record; default none.
  void set_on_change(std::function<void(const std::string&)> fn) { on_change_ = std::move(fn); }

  // Refuses new probes and waits for those in flight.
  void Stop();

 private:
  void RunProbe(const v1::Agent& agent);
  void Changed(const std::string& agent) const {
    if (on_change_) on_change_(agent);
  }

  const ProbeCall probe_;
  const AgentContactsOptions options_;
  std::function<void(const std::string&)> on_change_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, AgentContact> contacts_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Created at construction, reset by Stop (which joins it); guarded by stopping_ for Schedule.
  std::unique_ptr<common::ThreadPool> pool_;
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_AGENT_CONTACTS_H_
