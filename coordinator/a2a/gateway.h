// The A2A gateway's moving parts: the delivery loop that carries queued messages to agents
// (retrying with exponential backoff, failing the task after a limit), cancellation forwarded
// to agents, and the webhook loop for push notifications. Every change is stored before anyone
// is told of it: the A2A store parts publish their own changes on the task notifier, which
// wakes streams, waiting calls and the webhook loop. Outbound calls run on the gateway's own
// threads, never on a gRPC reactor thread.
#ifndef COORDINATOR_A2A_GATEWAY_H_
#define COORDINATOR_A2A_GATEWAY_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/thread_pool.h"
#include "common/url_allow_list.h"
#include "coordinator/a2a/agent_contacts.h"
#include "coordinator/a2a/agent_transport.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/push.h"
#include "coordinator/store/a2a/tasks.h"

namespace coordinator {

struct GatewayOptions {
  // Deadline of a unary call to an agent (CancelTask) and of fetching an agent's card. Default
  // 10s.
  absl::Duration call_timeout = absl::Seconds(10);
  // Deadline of one streamed delivery: how long an agent may work on one message. Default 1h.
  absl::Duration stream_timeout = absl::Hours(1);
  // Delay after the first failed delivery; doubles with each failure up to the maximum.
  // Defaults 500ms and 30s.
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  // Failed attempts that reached the agent after which a message is given up and its task
  // FAILED (default 10). Attempts that found nothing listening (NotListening: the agent is
  // down) are not counted: they go on at most max_backoff apart, and at once when the agent
  // registers, until delivery_ttl.
  int max_delivery_attempts = 10;
  // How long after it was sent a message not yet delivered is given up, its task FAILED saying
  // so (default 24h: long enough for an agent's restart during a night's run).
  absl::Duration delivery_ttl = absl::Hours(24);
  // Threads carrying deliveries to agents (default 64): how many messages can be at agents at
  // once. Each holds its thread through every durable write of the agent's answer, so fewer
  // threads cap the gateway (bench/analysis.md: 16 threads, 300/s; 64, 424/s).
  int delivery_threads = 64;
  // Deadline of one webhook POST (default 10s).
  absl::Duration push_timeout = absl::Seconds(10);
  // Hosts that agent cards fetched at registration, and the interfaces chosen from them, may
  // name (--outbound_allow_hosts, shared with webhooks; default loopback only).
  common::HostAllowList outbound_allow;
  // The probes of agents' reachability (agent_contacts.h; defaults there).
  AgentContactsOptions contacts;
};

class A2AGateway {
 public:
  // `notifier` is the one the store parts publish on: the gateway's webhook loop listens to it
  // for queued calls (see TaskNotifier::SetPushListener), so it takes the push listener.
  A2AGateway(A2ATasks* tasks, A2ADeliveryQueue* deliveries, A2APush* push,
             AgentRegistryStore* agents, TaskNotifier* notifier, GatewayOptions options);
  // Stops the loops and waits for in-flight deliveries to end (their calls are cancelled).
  ~A2AGateway();

  // The gateway's active part is the delivery loop (with the deliveries it and Dispatch start)
  // and the webhook loop: one replica of a data set runs it (the elected one on etcd;
  // docs/storage.md). Start() is SetActive(true).
  //
  // SetActive(true) starts the loops; deliveries left queued (by a previous run, another
  // replica, or this one while passive) resume, an agent's half-answered ones read back
  // (StartAttempt). SetActive(false) makes the gateway passive and returns once nothing of the
  // active part runs: in-flight agent calls are cancelled and their messages stay queued, their
  // attempts unchanged; a webhook POST in progress ends first (bounded by push_timeout). Either
  // may be called any number of times, in any order; after Stop() neither does anything.
  // While passive, Accepted, Dispatch and Kick start no delivery (the active replica's queue
  // scan takes the message); CancelTask, ResolveRegistration, AgentRegistered and the agent
  // probes work in either state.
  void Start();
  void SetActive(bool active);
  bool active();
  // Stops everything for good (the active part, the probes). Idempotent.
  void Stop();

  TaskNotifier* notifier() { return notifier_; }
  // What the gateway observed of each agent's reachability, from its calls and probes.
  AgentContacts* contacts() { return contacts_.get(); }

  // A client's message was stored (durably; the store published it) and its delivery queued:
  // hands the delivery straight to a delivery thread when it is the only message of its task
  // still queued; otherwise the queue scan takes it, in order.
  void Accepted(const A2ATasks::Change& change);
  // Starts delivering `delivery` on a delivery thread unless a delivery of its task is in
  // flight (false; that one's end wakes the queue scan). Whatever the caller saw, the delivery
  // is read again from the queue first and skipped when it is gone or not yet due, so a stale
  // view (a scan that read the queue before the delivery was done) sends nothing twice.
  // `message`, when given, is the queued message as stored (history records never change):
  // the attempt sends it instead of reading it back.
  bool Dispatch(v1::PendingDelivery delivery, std::optional<a2apb::Message> message = std::nullopt);
  // Wakes the delivery loop's queue scan now (an agent registered, a message waits behind
  // another of its task). Cheap, and safe in any state: passive or stopped, it does nothing.
  void Kick();
  // An agent (re)registered: its queued deliveries are due now.
  void AgentRegistered(const std::string& name);

  // Cancels a task: forwarded to its agent when the agent is running it, else done in the
  // store. Blocking (outbound call): run it on a worker thread.
  [[nodiscard]] absl::StatusOr<a2apb::Task> CancelTask(const a2apb::CancelTaskRequest& request);

  // What a RegisterAgent request is stored as (card_fetch.h ResolveRegistration): an agent
  // registered by card URL has its card fetched and its binding chosen. Blocking (outbound
  // call): run it on a worker thread.
  [[nodiscard]] absl::StatusOr<v1::Agent> ResolveRegistration(const v1::Agent& request) const;

 private:
  // Largest number of queue entries one pass of a loop reads.
  static constexpr int kScanBatch = 1000;
  // How long a loop sleeps when nothing is due and nobody kicks it.
  static constexpr absl::Duration kIdleWake = absl::Seconds(1);
  // Joins the loops, then the deliveries on the pool, waits for the asynchronous ones, and joins
  // their linger timer (the caller cancelled their calls). Under switch_mu_.
  void JoinActivePart() ABSL_EXCLUSIVE_LOCKS_REQUIRED(switch_mu_);
  void DeliveryLoop();
  // Delivers one queued message: reads it back from the queue, starts an attempt and, when the
  // attempt ends (here, or on the transport's threads for one that went on asynchronously),
  // records its outcome (AttemptEnded) and ends the task's delivery (DeliveryEnded).
  // `message`: the queued message when the caller holds it (Dispatch), else read back.
  void Deliver(v1::PendingDelivery seen, std::optional<a2apb::Message> message = std::nullopt);

  // One attempt is in steps, so that it may wait for the agent on a thread of its own
  // (RunBlocking) or on none (GoOnAsync: the agent's answer is stored from the transport's
  // thread that completes it). Its result is OK when the message reached the agent and the agent
  // answered; `remaining` is the task's deliveries still queued when this one left the queue in
  // the same transaction as the agent's answer.
  struct AttemptRun;
  // Records a failed attempt: retried later, or given up and the task FAILED.
  void DeliveryFailed(const AttemptRun& run, const absl::Status& result);
  // Reads the task, the agent and the message and calls the agent (or resumes its task), leaving
  // the call in run.reader; no call (null) when there is nothing to deliver.
  absl::Status StartAttempt(AttemptRun& run);
  // Goes on asynchronously when the transport and the store allow it: true when it does.
  bool GoOnAsync(const std::shared_ptr<AttemptRun>& run);
  // The transport's WhenOpening callback: stores a whole turn there and ends the attempt, or
  // hands what came to a delivery thread (ContinueOnPool).
  void OpeningArrived(const std::shared_ptr<AttemptRun>& run);
  // Runs the rest of an asynchronous attempt on the delivery pool; false when the gateway is
  // passive or stopping (nothing then).
  bool ContinueOnPool(const std::shared_ptr<AttemptRun>& run, bool have_burst);
  // Takes and stores the agent's answer burst by burst on this thread, waiting for it, then
  // finishes the call. `have_burst`: run.burst holds one taken and not yet handled.
  absl::Status RunBlocking(AttemptRun& run, bool have_burst);
  // Checks and stores run.burst (StoreBurst). False when the attempt reads no more: the turn
  // ended, or an error (run.apply_error); the call is then cancelled.
  bool HandleBurst(AttemptRun& run);
  // The attempt's result, from what it stored and how the call ended (`status`).
  absl::Status FinishAttempt(AttemptRun& run, const absl::Status& status);
  // Counts, dequeues or fails the delivery after its attempt; whether the queue scan should
  // look again.
  bool AttemptEnded(AttemptRun& run, const absl::Status& result);
  // The task's delivery is no longer in flight, and no longer holds one of `agent`'s slots.
  void DeliveryEnded(const std::string& task_id, const std::string& agent, bool rescan);
  // The timer of the asynchronous attempts' openings (AgentCall::LingerPassed), one thread for
  // all of them; runs with the active part.
  void LingerLoop();
  // An attempt at a message the agent has already answered (header.agent_answered_seq): reads
  // the agent's task back. Ended or interrupted: stores it as the answer (dequeuing the
  // delivery, setting `*remaining`) and returns null. Still running: returns the subscription
  // to it, read as the answer. UNAVAILABLE when the agent cannot say (retried), after
  // forgetting its task id when the agent no longer knows it (the message then goes again). An
  // agent that keeps no tasks to read back (GetTask unimplemented or UNSUPPORTED_OPERATION):
  // sets `*resumed` to false and returns null, and the message goes again.
  absl::StatusOr<std::unique_ptr<AgentCall>> Resume(
      const v1::StoredTask& header, const v1::Agent& agent, AgentTransport& transport,
      const v1::PendingDelivery& delivery, std::optional<int64_t>* remaining, bool* resumed);
  // Stores a burst of the agent's answer to `delivery` (A2ATasks::ApplyAgentBurst, which
  // publishes it), dequeuing the delivery when the burst ends the turn; then sets `*remaining`
  // as an attempt does. Whether the task is final or interrupted afterwards.
  absl::StatusOr<bool> StoreBurst(const v1::PendingDelivery& delivery,
                                  absl::Span<const a2apb::StreamResponse> burst,
                                  std::optional<int64_t>* remaining);
  void PushLoop();
  void SendPush(const v1::PushDelivery& push);
  absl::Duration Backoff(int attempts) const;
  // The reachability probe (AgentContacts::ProbeCall): GetTask of an id no agent gave out, over
  // the agent's transport.
  AgentContacts::Outcome ProbeAgent(const v1::Agent& agent, absl::Time deadline);
  // How many times `agent` registered since start (AgentRegistered).
  // Agent `agent`'s max_in_flight (0: no limit), from the registry the first time.
  int AgentLimit(const std::string& agent);
  // Counts a delivery to `agent` as in flight unless it has `limit` already (then the agent
  // waits for one of its deliveries to end).
  bool TakeAgentSlot(const std::string& agent, int limit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t Registrations(const std::string& agent);

  A2ATasks* tasks_;               // not owned
  A2ADeliveryQueue* deliveries_;  // not owned
  A2APush* push_;                 // not owned
  AgentRegistryStore* agents_;    // not owned
  TaskNotifier* notifier_;        // not owned
  const GatewayOptions options_;

  // Held by SetActive and Stop throughout, so that one switch (thread starts and joins) ends
  // before the next begins. Taken before mu_, never while holding it.
  absl::Mutex switch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Stop ran: never active again
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  bool kicked_ ABSL_GUARDED_BY(mu_) = false;
  bool push_kicked_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> registrations_ ABSL_GUARDED_BY(mu_);
  // Tasks whose Dispatch was refused while they were in flight: the end of that delivery wakes
  // the queue scan.
  absl::flat_hash_set<std::string> deferred_ ABSL_GUARDED_BY(mu_);
  // Deliveries in flight per agent, and the agents at their max_in_flight with a delivery held
  // back: the end of one of theirs wakes the queue scan.
  absl::flat_hash_map<std::string, int> agent_in_flight_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> agents_waiting_ ABSL_GUARDED_BY(mu_);
  // Each agent's max_in_flight as last read from the registry (0: none); dropped when it
  // registers again. Taken after mu_ when both are held.
  absl::Mutex limits_mu_ ABSL_ACQUIRED_AFTER(mu_);
  absl::flat_hash_map<std::string, int> limits_ ABSL_GUARDED_BY(limits_mu_);
  // The agent calls in flight, cancelled by Stop.
  absl::flat_hash_set<AgentCall*> calls_ ABSL_GUARDED_BY(mu_);
  // Attempts going on asynchronously (not on the pool): JoinActivePart waits for them.
  int async_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  // Openings of asynchronous attempts by the time their linger passes, in the order they were
  // armed: one constant linger from sending, armed just after, so nearly in time order (one due
  // behind a later one passes with it). Taken after mu_ when both are held.
  absl::Mutex linger_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::deque<std::pair<absl::Time, std::weak_ptr<AttemptRun>>> lingering_
      ABSL_GUARDED_BY(linger_mu_);
  bool linger_stopping_ ABSL_GUARDED_BY(linger_mu_) = false;
  std::thread linger_thread_ ABSL_GUARDED_BY(switch_mu_);
  AgentTransports transports_;
  // After transports_: its probes use them, and Stop ends the probes first.
  std::unique_ptr<AgentContacts> contacts_;

  // Set and taken under mu_ (Dispatch schedules on it); present while active.
  std::unique_ptr<common::ThreadPool> delivery_pool_;
  std::thread delivery_thread_ ABSL_GUARDED_BY(switch_mu_);
  std::thread push_thread_ ABSL_GUARDED_BY(switch_mu_);
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_GATEWAY_H_
