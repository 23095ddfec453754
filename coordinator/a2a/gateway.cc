#include "coordinator/a2a/gateway.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "a2a_protocol/errors.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "coordinator/a2a/card_fetch.h"
#include "coordinator/store/records/time_util.h"
#include "storage/durability_scope.h"

namespace coordinator {
namespace {

// The delivery figures of /metrics.
struct DeliveryCounters {
  common::Gauge* queued;
  common::Counter* delivered;
  common::Counter* retries;
  common::Counter* waits;
  common::Counter* held_back;
  common::Counter* given_up;
};

const DeliveryCounters& DeliveryMetrics() {
  static const DeliveryCounters counters = [] {
    common::MetricsRegistry& registry = common::MetricsRegistry::Default();
    return DeliveryCounters{
        registry
            .AddGauge("coordinator_a2a_deliveries_queued",
                      "Messages queued for delivery to agents, at the last scan of the queue "
                      "(at most 1000 are counted).")
            ->WithLabels({}),
        registry
            .AddCounter("coordinator_a2a_deliveries_total",
                        "Messages delivered to agents (the agent answered).")
            ->WithLabels({}),
        registry
            .AddCounter("coordinator_a2a_delivery_retries_total",
                        "Failed delivery attempts that reached the agent and will be retried.")
            ->WithLabels({}),
        registry
            .AddCounter("coordinator_a2a_delivery_waits_total",
                        "Delivery attempts that found nothing listening at the agent: the "
                        "message waits for it (not counted against its attempts).")
            ->WithLabels({}),
        registry
            .AddCounter("coordinator_a2a_deliveries_held_back_total",
                        "Times a delivery was held back because its agent had max_in_flight "
                        "deliveries in flight; it goes when one of them ends.")
            ->WithLabels({}),
        registry
            .AddCounter("coordinator_a2a_deliveries_given_up_total",
                        "Deliveries given up (attempts used up or a final error); the task "
                        "FAILED.")
            ->WithLabels({}),
    };
  }();
  return counters;
}

bool IsInterrupted(a2apb::TaskState state) {
  return state == a2apb::TASK_STATE_INPUT_REQUIRED || state == a2apb::TASK_STATE_AUTH_REQUIRED;
}

// Codes after which the same message may well get through later.
bool IsRetryable(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

// How long the agent's opening snapshot of the task waits for the events after it.
constexpr absl::Duration kOpeningLinger = absl::Milliseconds(20);
// How often the asynchronous attempts' linger timer passes at most.
constexpr absl::Duration kLingerPass = absl::Milliseconds(5);

// Whether `response` ends the agent's turn: a final or interrupted status, or a direct message.
bool EndsTurn(const a2apb::StreamResponse& response) {
  if (response.has_message()) return true;
  if (response.has_status_update()) {
    return IsFinalOrInterrupted(response.status_update().status().state());
  }
  return response.has_task() && IsFinalOrInterrupted(response.task().status().state());
}

// Whether `response`, the first of a delivery's stream, is only the agent's snapshot of the
// task as it already stands: no artifacts, no status message, and the state the task has (or
// none; or, on a follow-up, the interrupted state being answered, which is set aside).
bool OpensQuietly(const a2apb::StreamResponse& response, const v1::StoredTask& header,
                  bool follow_up) {
  if (!response.has_task() || response.task().artifacts_size() > 0) return false;
  const a2apb::TaskStatus& status = response.task().status();
  if (status.has_message()) return false;
  return status.state() == a2apb::TASK_STATE_UNSPECIFIED ||
         status.state() == header.task().status().state() ||
         (follow_up && IsInterrupted(status.state()));
}

}  // namespace

A2AGateway::A2AGateway(A2ATasks* tasks, A2ADeliveryQueue* deliveries, A2APush* push,
                       AgentRegistryStore* agents, TaskNotifier* notifier, GatewayOptions options)
    : tasks_(tasks),
      deliveries_(deliveries),
      push_(push),
      agents_(agents),
      notifier_(notifier),
      options_(options),
      transports_([&options] {
        AgentTransportOptions transport;
        transport.outbound_allow = options.outbound_allow;
        transport.connect_timeout = options.call_timeout;
        return transport;
      }()),
      contacts_(std::make_unique<AgentContacts>(
          [this](const v1::Agent& agent, absl::Time deadline) {
            return ProbeAgent(agent, deadline);
          },
          options.contacts)) {
  notifier_->SetPushListener([this] {
    absl::MutexLock lock(&mu_);
    push_kicked_ = true;
  });
}

A2AGateway::~A2AGateway() {
  // Once this returns the listener is not running and is not called again.
  notifier_->SetPushListener(nullptr);
  Stop();
}

void A2AGateway::Start() { SetActive(true); }

void A2AGateway::SetActive(bool active) {
  absl::MutexLock switching(&switch_mu_);
  if (active) {
    absl::MutexLock lock(&mu_);
    if (stopping_ || active_) return;
    // Under mu_: Dispatch reads the pool under it.
    delivery_pool_ = std::make_unique<common::ThreadPool>(
        options_.delivery_threads, common::ThreadPool::kUnbounded, "a2a-deliver");
    active_ = true;
    kicked_ = false;  // the loop's first pass scans the queue anyway
  } else {
    {
      absl::MutexLock lock(&mu_);
      if (!active_) return;
      active_ = false;
      deferred_.clear();
      agents_waiting_.clear();
      for (AgentCall* call : calls_) call->Cancel();
    }
    JoinActivePart();
    return;
  }
  delivery_thread_ = std::thread([this] {
    common::SetThreadName("a2a-queue-scan");
    DeliveryLoop();
  });
  push_thread_ = std::thread([this] {
    common::SetThreadName("a2a-push");
    PushLoop();
  });
  {
    absl::MutexLock lock(&linger_mu_);
    linger_stopping_ = false;
  }
  linger_thread_ = std::thread([this] {
    common::SetThreadName("a2a-linger");
    LingerLoop();
  });
}

bool A2AGateway::active() {
  absl::MutexLock lock(&mu_);
  return active_;
}

void A2AGateway::JoinActivePart() {
  if (delivery_thread_.joinable()) delivery_thread_.join();
  if (push_thread_.joinable()) push_thread_.join();
  // The loops are gone, so nothing schedules on the pool any more; Dispatch sees !active_.
  std::unique_ptr<common::ThreadPool> pool;
  {
    absl::MutexLock lock(&mu_);
    pool = std::move(delivery_pool_);
  }
  pool.reset();  // joins the deliveries, whose calls were cancelled
  // Then the deliveries that went on asynchronously (those the pool started included): their
  // calls were cancelled too, and none goes back to the pool now.
  {
    absl::MutexLock lock(&mu_);
    auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return async_attempts_ == 0; };
    mu_.Await(absl::Condition(&none));
  }
  // Last, the timer of their openings: a cancelled call ran its opening's callback as it ended.
  {
    absl::MutexLock lock(&linger_mu_);
    linger_stopping_ = true;
    lingering_.clear();
  }
  if (linger_thread_.joinable()) linger_thread_.join();
}

void A2AGateway::Stop() {
  absl::MutexLock switching(&switch_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    active_ = false;
    for (AgentCall* call : calls_) call->Cancel();
  }
  contacts_->Stop();
  JoinActivePart();
}

void A2AGateway::Accepted(const A2ATasks::Change& change) {
  if (change.queued_delivery_seq <= 0) return;
  if (change.header.pending_deliveries() == 1) {
    // The only message of its task waiting: nothing to keep in order behind.
    v1::PendingDelivery delivery;
    delivery.set_task_id(change.header.task().id());
    delivery.set_tenant(change.header.tenant());
    delivery.set_history_seq(change.queued_delivery_seq);
    if (Dispatch(std::move(delivery), change.queued_message)) return;
  }
  Kick();
}

bool A2AGateway::Dispatch(v1::PendingDelivery delivery, std::optional<a2apb::Message> message) {
  const int limit = AgentLimit(delivery.tenant());
  absl::MutexLock lock(&mu_);
  if (!active_ || delivery_pool_ == nullptr) return false;
  if (in_flight_.contains(delivery.task_id())) {
    deferred_.insert(delivery.task_id());
    return false;
  }
  // At its limit: the end of one of the agent's deliveries wakes the queue scan.
  if (!TakeAgentSlot(delivery.tenant(), limit)) return false;
  in_flight_.insert(delivery.task_id());
  // Queued under mu_, so never on a pool that Stop() is already tearing down.
  delivery_pool_->Schedule(
      [this, delivery = std::move(delivery), message = std::move(message)]() mutable {
        Deliver(std::move(delivery), std::move(message));
      });
  return true;
}

int A2AGateway::AgentLimit(const std::string& agent) {
  {
    absl::MutexLock lock(&limits_mu_);
    if (auto it = limits_.find(agent); it != limits_.end()) return it->second;
  }
  // Unknown (or unreadable) now: no limit; the delivery itself finds out what is wrong.
  absl::StatusOr<v1::Agent> registered = agents_->Get(agent);
  const int limit = registered.ok() ? registered->max_in_flight() : 0;
  absl::MutexLock lock(&limits_mu_);
  if (registered.ok()) limits_[agent] = limit;
  return limit;
}

bool A2AGateway::TakeAgentSlot(const std::string& agent, int limit) {
  int& count = agent_in_flight_[agent];
  if (limit > 0 && count >= limit) {
    agents_waiting_.insert(agent);
    DeliveryMetrics().held_back->Increment();
    return false;
  }
  ++count;
  return true;
}

void A2AGateway::Kick() {
  absl::MutexLock lock(&mu_);
  kicked_ = true;
}

void A2AGateway::AgentRegistered(const std::string& name) {
  {
    absl::MutexLock lock(&mu_);
    ++registrations_[name];
  }
  {
    absl::MutexLock lock(&limits_mu_);
    limits_.erase(name);  // its max_in_flight may have changed
  }
  absl::Status s = deliveries_->RetryDeliveriesNow(name);
  if (!s.ok()) {
    common::LogWarn({{"agent", name}}, "cannot reschedule deliveries: %s", s.message());
  }
  Kick();
}

uint64_t A2AGateway::Registrations(const std::string& agent) {
  absl::MutexLock lock(&mu_);
  auto it = registrations_.find(agent);
  return it == registrations_.end() ? 0 : it->second;
}

absl::Duration A2AGateway::Backoff(int attempts) const {
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < attempts && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

void A2AGateway::DeliveryLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!active_) return;
      kicked_ = false;
    }
    absl::Time wake = absl::Now() + kIdleWake;
    absl::StatusOr<std::vector<v1::PendingDelivery>> pending =
        deliveries_->PendingDeliveries(kScanBatch);
    if (!pending.ok()) {
      LOG_ERROR("cannot read the delivery queue: %s", pending.status().message());
    } else {
      DeliveryMetrics().queued->Set(static_cast<int64_t>(pending->size()));
      const absl::Time now = absl::Now();
      absl::flat_hash_set<std::string> seen_tasks;
      for (v1::PendingDelivery& d : *pending) {
        // Messages of one task go in order, one at a time: only its oldest is a candidate.
        if (!seen_tasks.insert(d.task_id()).second) continue;
        const absl::Time due = FromProtoTime(d.next_attempt_time());
        if (due > now) {
          wake = std::min(wake, due);
          continue;
        }
        const int limit = AgentLimit(d.tenant());
        {
          absl::MutexLock lock(&mu_);
          if (!active_) return;
          // In flight: its end wakes this loop when more of the task waits.
          if (in_flight_.contains(d.task_id())) continue;
          // The agent at its limit: the end of one of its deliveries wakes this loop.
          if (!TakeAgentSlot(d.tenant(), limit)) continue;
          in_flight_.insert(d.task_id());
        }
        delivery_pool_->Schedule([this, d = std::move(d)]() mutable { Deliver(std::move(d)); });
      }
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return kicked_ || !active_; };
    mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
  }
}

// One delivery attempt: what it read before calling the agent, the call, and what came back.
// Shared by the thread that starts it and, for an attempt that goes on asynchronously, the
// transport's threads (one at a time: each step hands the next to whoever runs it).
struct A2AGateway::AttemptRun {
  v1::PendingDelivery delivery;
  uint64_t registrations = 0;  // the agent's registrations when the attempt began
  v1::StoredTask header;
  // The message to send, when the caller held it (Dispatch); else StartAttempt reads it.
  std::optional<a2apb::Message> message;
  std::optional<v1::Agent> agent;
  std::unique_ptr<AgentTransport> transport;
  std::unique_ptr<AgentCall> reader;  // null: nothing to call (or nothing called yet)
  bool resume = false;
  bool follow_up = false;
  absl::Time sent_at;
  // On a follow-up turn, agents on the A2A JavaScript SDK (whose executors must publish the
  // task first on every turn) open the stream with the task as they stored it: still
  // INPUT_REQUIRED or AUTH_REQUIRED, the state this very message answers. That status is set
  // aside and counts only if the stream ends cleanly with no other status after it.
  std::optional<a2apb::TaskStatus> opening_status;
  std::vector<a2apb::StreamResponse> burst;
  bool got_any = false;
  bool reached_end = false;
  absl::Status apply_error;
  std::optional<int64_t> remaining;

  // Whether `first`, the first event of this attempt's answer, is the agent's quiet opening.
  bool OpensQuietly(const a2apb::StreamResponse& first) const {
    return coordinator::OpensQuietly(first, header, follow_up);
  }
};

void A2AGateway::Deliver(v1::PendingDelivery seen, std::optional<a2apb::Message> message) {
  const std::string task_id = seen.task_id();
  const std::string agent = seen.tenant();  // whose slot this delivery holds
  // Whether the queue scan should look again when this ends: more of the task's messages wait,
  // or this one was rescheduled.
  bool rescan = false;
  // What the caller saw may be stale (a scan that read the queue before this delivery was done
  // by another thread): the queue entry as stored now decides. Reading it also waits until it
  // is durable, and with it the message it carries.
  absl::StatusOr<v1::PendingDelivery> current =
      deliveries_->GetDelivery(task_id, seen.history_seq());
  if (!current.ok()) {
    if (!absl::IsNotFound(current.status())) {
      common::LogError({{"task_id", task_id}, {"agent", seen.tenant()}},
                       "cannot read a queued delivery: %s", current.status().message());
      rescan = true;
    }
  } else if (FromProtoTime(current->next_attempt_time()) > absl::Now()) {
    rescan = true;  // rescheduled since it was seen: the scan waits for it
  } else {
    auto run = std::make_shared<AttemptRun>();
    run->delivery = *std::move(current);
    run->message = std::move(message);
    run->registrations = Registrations(run->delivery.tenant());
    absl::Status result = StartAttempt(*run);
    if (result.ok() && run->reader != nullptr) {
      if (GoOnAsync(run)) return;  // its end runs AttemptEnded and DeliveryEnded
      result = RunBlocking(*run, /*have_burst=*/false);
    }
    rescan = AttemptEnded(*run, result);
  }
  DeliveryEnded(task_id, agent, rescan);
}

bool A2AGateway::AttemptEnded(AttemptRun& run, const absl::Status& result) {
  const v1::PendingDelivery& delivery = run.delivery;
  const std::string& task_id = delivery.task_id();
  if (result.ok()) {
    DeliveryMetrics().delivered->Increment();
    if (!run.remaining.has_value()) {
      absl::StatusOr<int64_t> done = deliveries_->DeliveryDone(task_id, delivery.history_seq());
      if (done.ok()) {
        run.remaining = *done;
      } else {
        common::LogError({{"task_id", task_id}, {"agent", delivery.tenant()}},
                         "cannot dequeue a delivery: %s", done.status().message());
      }
    }
    return !run.remaining.has_value() || *run.remaining > 0;
  }
  DeliveryFailed(run, result);
  // The agent registered again while this attempt failed: its reschedule may have come before
  // this failure's backoff was stored, which would then hold the message back for a whole
  // backoff although the agent is there now.
  if (Registrations(delivery.tenant()) != run.registrations) AgentRegistered(delivery.tenant());
  return true;
}

void A2AGateway::DeliveryEnded(const std::string& task_id, const std::string& agent, bool rescan) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(task_id);
  if (deferred_.erase(task_id) > 0) rescan = true;
  if (auto it = agent_in_flight_.find(agent); it != agent_in_flight_.end() && --it->second <= 0) {
    agent_in_flight_.erase(it);
  }
  if (agents_waiting_.erase(agent) > 0) rescan = true;
  if (rescan) kicked_ = true;
}

void A2AGateway::DeliveryFailed(const AttemptRun& run, const absl::Status& result) {
  const v1::PendingDelivery& delivery = run.delivery;
  const std::string& task_id = delivery.task_id();
  {
    // A delivery cut short by our own shutdown, or by this replica turning passive, is not the
    // agent's failure: it stays queued, its attempts unchanged.
    absl::MutexLock lock(&mu_);
    if (!active_) return;
  }
  const absl::Time now = absl::Now();
  // Enqueued before the time was kept: its time to live starts now.
  const absl::Time expires =
      (delivery.has_enqueue_time() ? FromProtoTime(delivery.enqueue_time()) : now) +
      options_.delivery_ttl;
  DeliveryFailure failure;
  failure.error = std::string(result.message());
  failure.reached = run.got_any || !IsNotListening(result);
  // While nothing listens the message waits for the agent, retried at most max_backoff apart
  // (and at once when it registers), without spending its attempts.
  const int attempts = delivery.attempts() + (failure.reached ? 1 : 0);
  const int backoff_step = failure.reached ? attempts : delivery.unreached() + 1;
  failure.next_attempt = std::min(now + Backoff(backoff_step), expires);
  // Errors without a retryable code are the agent's definite answer: no point retrying.
  if (!IsRetryable(result.code()) ||
      (failure.reached && attempts >= options_.max_delivery_attempts)) {
    failure.give_up = absl::StrCat("delivery to agent ", delivery.tenant(), " failed after ",
                                   attempts, " attempts: ", result.message());
  } else if (now >= expires) {
    failure.give_up = absl::StrCat(
        "delivery to agent ", delivery.tenant(), " gave up: not delivered within ",
        absl::FormatDuration(options_.delivery_ttl), " of being sent (--a2a_delivery_ttl); ",
        failure.reached ? "last error: " : "nothing listened at the agent's address: ",
        result.message());
  }
  const bool give_up = failure.give_up.has_value();
  (give_up           ? DeliveryMetrics().given_up
   : failure.reached ? DeliveryMetrics().retries
                     : DeliveryMetrics().waits)
      ->Increment();
  if (failure.reached || give_up) {
    common::LogWarn({{"task_id", task_id}, {"agent", delivery.tenant()}},
                    "delivery attempt %d failed: %s%s", attempts, result.message(),
                    give_up ? " (giving up)" : "");
  } else if (delivery.unreached() == 0) {
    // Once per outage of the agent, not once per try.
    common::LogWarn({{"task_id", task_id}, {"agent", delivery.tenant()}},
                    "agent not reachable, the message waits for it (at most until %s): %s",
                    absl::FormatTime(expires), result.message());
  }
  absl::StatusOr<A2ATasks::Change> change =
      deliveries_->DeliveryFailed(task_id, delivery.history_seq(), failure);
  if (!change.ok()) {
    common::LogError({{"task_id", task_id}, {"agent", delivery.tenant()}},
                     "cannot record a failed delivery: %s", change.status().message());
  }
}

absl::Status A2AGateway::StartAttempt(AttemptRun& run) {
  const v1::PendingDelivery& delivery = run.delivery;
  const std::string& task_id = delivery.task_id();
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(task_id);
  if (absl::IsNotFound(header.status())) return absl::OkStatus();  // nothing left to deliver
  RETURN_IF_ERROR(header.status());
  run.header = *std::move(header);
  if (IsTerminal(run.header.task().status().state())) return absl::OkStatus();
  absl::StatusOr<v1::Agent> agent = agents_->Get(run.header.tenant());
  if (absl::IsNotFound(agent.status())) {
    return NotListening(
        absl::UnavailableError(absl::StrCat("agent ", run.header.tenant(), " is not registered")));
  }
  RETURN_IF_ERROR(agent.status());
  run.agent = *std::move(agent);
  a2apb::Message message;
  if (run.message.has_value()) {
    message = *std::move(run.message);
    run.message.reset();
  } else {
    ASSIGN_OR_RETURN(message, tasks_->HistoryMessage(task_id, delivery.history_seq()));
  }
  // The agent knows the task by its own id (none before its first answer).
  message.set_task_id(run.header.agent_task_id());
  message.set_context_id(run.header.task().context_id());
  a2apb::SendMessageRequest request;
  *request.mutable_message() = std::move(message);

  ASSIGN_OR_RETURN(run.transport, transports_.For(*run.agent));
  {
    absl::MutexLock lock(&mu_);
    if (!active_) return absl::CancelledError("the gateway is stopping or passive");
  }
  // The agent answered this very message before the attempt ended (the coordinator restarted,
  // or the stream broke, in the middle of the answer): the agent has it, and may have finished
  // it meanwhile. The message is not sent twice (an agent refuses a message for a task that has
  // ended, and would run it twice otherwise): the attempt resumes the agent's task instead.
  run.resume = !run.header.agent_task_id().empty() &&
               run.header.agent_answered_seq() >= delivery.history_seq();
  std::unique_ptr<AgentCall> reader;
  if (run.resume) {
    ASSIGN_OR_RETURN(reader, Resume(run.header, *run.agent, *run.transport, delivery,
                                    &run.remaining, &run.resume));
    if (run.resume && reader == nullptr) return absl::OkStatus();  // the task had ended: stored
  }
  run.follow_up = !run.resume && !run.header.agent_task_id().empty();
  run.sent_at = absl::Now();
  if (!run.resume) {
    reader = run.transport->SendStreaming(request, run.sent_at + options_.stream_timeout);
  }
  run.reader = std::move(reader);
  absl::MutexLock lock(&mu_);
  calls_.insert(run.reader.get());
  if (!active_) run.reader->Cancel();  // Stop or SetActive(false) ran before it was registered
  return absl::OkStatus();
}

bool A2AGateway::GoOnAsync(const std::shared_ptr<AttemptRun>& run) {
  // The agent's answer is stored on the transport's thread that completes it, as SendMessage's
  // acceptance is on gRPC's: only while the store's writes do not block.
  if (tasks_->store()->WritesMayBlock()) return false;
  {
    absl::MutexLock lock(&mu_);
    ++async_attempts_;
  }
  AttemptRun* r = run.get();
  const bool async = r->reader->WhenOpening(
      [r](const a2apb::StreamResponse& first) { return r->OpensQuietly(first); }, EndsTurn,
      [this, run] { OpeningArrived(run); });
  if (!async) {
    absl::MutexLock lock(&mu_);
    --async_attempts_;
    return false;
  }
  // Armed only once the callback is registered: a timer that passed before would find nothing
  // to run, and an opening that does not end the turn (a long-running agent's first event)
  // would then wait unstored until the turn ends (on a loaded machine the linger's 20 ms can
  // pass between sending and here). An opening that was whole at once has run the callback
  // already; this entry then finds nothing to do.
  absl::MutexLock lock(&linger_mu_);
  lingering_.emplace_back(r->sent_at + kOpeningLinger, run);
  return true;
}

void A2AGateway::LingerLoop() {
  absl::MutexLock lock(&linger_mu_);
  absl::Time last_pass = absl::InfinitePast();
  while (!linger_stopping_) {
    auto armed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(linger_mu_) {
      return !lingering_.empty() || linger_stopping_;
    };
    linger_mu_.Await(absl::Condition(&armed));
    if (linger_stopping_) break;
    // Passes at most every kLingerPass: the openings due meanwhile are taken together, a little
    // late, instead of a wake-up for each.
    const absl::Time due = std::max(lingering_.front().first, last_pass + kLingerPass);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(linger_mu_) { return linger_stopping_; };
    if (linger_mu_.AwaitWithDeadline(absl::Condition(&stopping), due)) break;
    last_pass = absl::Now();
    std::vector<std::weak_ptr<AttemptRun>> passed;
    while (!lingering_.empty() && lingering_.front().first <= last_pass) {
      passed.push_back(std::move(lingering_.front().second));
      lingering_.pop_front();
    }
    linger_mu_.Unlock();
    for (std::weak_ptr<AttemptRun>& weak : passed) {
      // Most have had their whole opening, or ended, long before: nothing happens then.
      if (std::shared_ptr<AttemptRun> run = weak.lock()) run->reader->LingerPassed();
    }
    linger_mu_.Lock();
  }
}

void A2AGateway::OpeningArrived(const std::shared_ptr<AttemptRun>& run) {
  AttemptRun& r = *run;
  r.burst.clear();
  const size_t taken = r.reader->Take(&r.burst, absl::InfinitePast());
  // The common answer: a whole turn at once (the agent's opening snapshot, if any, and what
  // follows it up to the event that ends the turn), stored here. Anything else (a turn that
  // goes on, an opening that came alone) goes on on a delivery thread, which may wait.
  const bool whole =
      taken > 0 && (r.burst.size() > 1 || !r.OpensQuietly(r.burst[0])) && EndsTurn(r.burst.back());
  if (taken == 0) {
    // Nothing yet when the linger passed (the thread on the pool waits for the first event, as
    // TakeOpening does after its linger), or the answer ended with nothing (it finds that).
    if (ContinueOnPool(run, /*have_burst=*/false)) return;
    r.reader->Cancel();
  } else if (!whole) {
    if (ContinueOnPool(run, /*have_burst=*/true)) return;
    // Stopping: what came is stored, the rest waits for the next attempt.
    if (HandleBurst(r)) r.reader->Cancel();
  } else if (HandleBurst(r)) {
    // Stored, but the turn goes on after all (the store did not see it end).
    if (ContinueOnPool(run, /*have_burst=*/false)) return;
    r.reader->Cancel();
  }
  r.reader->WhenFinished([this, run](absl::Status status) {
    const absl::Status result = FinishAttempt(*run, status);
    DeliveryEnded(run->delivery.task_id(), run->delivery.tenant(), AttemptEnded(*run, result));
    absl::MutexLock lock(&mu_);
    --async_attempts_;  // the gateway may go once this is unlocked: nothing touches it after
  });
}

bool A2AGateway::ContinueOnPool(const std::shared_ptr<AttemptRun>& run, bool have_burst) {
  absl::MutexLock lock(&mu_);
  // Passive or stopping: the pool is going (JoinActivePart takes it before it waits for the
  // asynchronous attempts), and nothing more is taken from the agent.
  if (!active_ || delivery_pool_ == nullptr) return false;
  delivery_pool_->Schedule([this, run, have_burst] {
    const absl::Status result = RunBlocking(*run, have_burst);
    DeliveryEnded(run->delivery.task_id(), run->delivery.tenant(), AttemptEnded(*run, result));
  });
  --async_attempts_;  // a delivery on the pool from here on
  return true;
}

absl::Status A2AGateway::RunBlocking(AttemptRun& run, bool have_burst) {
  AgentCall& reader = *run.reader;
  auto opens_quietly = [&run](const a2apb::StreamResponse& first) {
    return run.OpensQuietly(first);
  };
  while (!run.reached_end) {
    if (!have_burst) {
      run.burst.clear();
      // The agent's opening snapshot changes nothing a client sees (it names the agent's own
      // task id): it waits a moment for the events that follow it, up to the one that ends the
      // turn, to store them together. The transport gathers them while this thread sleeps.
      const size_t taken = run.got_any
                               ? reader.Take(&run.burst)
                               : reader.TakeOpening(&run.burst, run.sent_at + kOpeningLinger,
                                                    opens_quietly, EndsTurn);
      if (taken == 0) break;  // the stream ended
    }
    have_burst = false;
    if (!run.got_any && opens_quietly(run.burst[0])) {
      // The opening came late, or alone: what follows it is gathered here, event by event.
      const absl::Time until = absl::Now() + kOpeningLinger;
      while ((run.burst.size() == 1 || !EndsTurn(run.burst.back())) &&
             run.burst.size() < kMaxBurstEvents && reader.Take(&run.burst, until) > 0) {
      }
    }
    if (!HandleBurst(run)) break;
  }
  return FinishAttempt(run, reader.Finish());
}

bool A2AGateway::HandleBurst(AttemptRun& run) {
  // Every event that waits is stored in one transaction with the others (one durable write),
  // in order, and only then published (StoreBurst). The burst that ends the task (or asks for
  // input) also dequeues the delivery.
  size_t valid = 0;
  absl::Status invalid;
  for (a2apb::StreamResponse& response : run.burst) {
    const bool first = !run.got_any;
    run.got_any = true;
    if (first && run.follow_up && response.has_task() &&
        IsInterrupted(response.task().status().state())) {
      run.opening_status = response.task().status();
      response.mutable_task()->clear_status();
    } else if (response.has_status_update() || response.has_message() ||
               (response.has_task() &&
                response.task().status().state() != a2apb::TASK_STATE_UNSPECIFIED)) {
      run.opening_status.reset();
    }
    invalid = A2ATasks::CheckAgentUpdate(response);
    if (!invalid.ok()) break;  // what came before it is still stored
    ++valid;
  }
  if (valid > 0) {
    absl::StatusOr<bool> ended =
        StoreBurst(run.delivery, absl::MakeConstSpan(run.burst.data(), valid), &run.remaining);
    if (!ended.ok()) {
      run.apply_error = ended.status();
      run.reader->Cancel();
      return false;
    }
    if (*ended) {
      run.reached_end = true;
      run.reader->Cancel();  // the agent's stream should end here; do not wait for it
      return false;
    }
  }
  if (!invalid.ok()) {
    run.apply_error = invalid;
    run.reader->Cancel();
    return false;
  }
  return true;
}

absl::Status A2AGateway::FinishAttempt(AttemptRun& run, const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    calls_.erase(run.reader.get());
  }
  const v1::Agent& agent = *run.agent;
  const std::string& task_id = run.delivery.task_id();
  // What this call says of the agent's reachability: it answered when anything came back. A
  // call cut short by our own shutdown before any answer says nothing.
  if (run.got_any || !absl::IsCancelled(status)) {
    contacts_->Record(agent.name(), run.resume ? "read back" : "delivery",
                      run.got_any || AgentContacts::Answered(status), status.message());
  }
  if (!run.apply_error.ok()) return run.apply_error;
  if (!run.got_any && (run.follow_up || run.resume) &&
      a2a_protocol::Reason(status) == a2a_protocol::kTaskNotFound) {
    // The agent no longer knows its own task (it restarted, and kept its tasks in memory): the
    // coordinator still holds the whole task, so the message goes again as a new task at the
    // agent instead of failing a task that nothing is wrong with.
    RETURN_IF_ERROR(tasks_->ForgetAgentTaskId(task_id, run.header.agent_task_id()));
    return absl::UnavailableError(absl::StrCat(
        "agent ", agent.name(), " no longer knows its task ", run.header.agent_task_id(),
        " (it restarted?): the message goes again as a new task at the agent"));
  }
  if (status.ok() && !run.reached_end && run.opening_status.has_value()) {
    // Nothing came after the opening snapshot: it was the agent's answer after all.
    a2apb::StreamResponse update;
    *update.mutable_task()->mutable_status() = *std::move(run.opening_status);
    RETURN_IF_ERROR(
        StoreBurst(run.delivery, absl::MakeConstSpan(&update, 1), &run.remaining).status());
  }
  if (run.reached_end || status.ok()) return absl::OkStatus();
  if (IsRetryable(status.code()) || (run.resume && !run.got_any)) {
    // A subscription refused before any event: the task most likely ended between GetTask and
    // SubscribeToTask (agents refuse to subscribe to an ended task). The next attempt reads it.
    return KeepNotListening(status, absl::UnavailableError(absl::StrCat(
                                        "agent ", agent.name(), " at ", agent.endpoint(), " (",
                                        agent.protocol_binding(), "): ", status.message())));
  }
  return status;  // the agent's definite answer, its A2A reason kept
}

absl::StatusOr<std::unique_ptr<AgentCall>> A2AGateway::Resume(
    const v1::StoredTask& header, const v1::Agent& agent, AgentTransport& transport,
    const v1::PendingDelivery& delivery, std::optional<int64_t>* remaining, bool* resumed) {
  a2apb::GetTaskRequest get;
  get.set_id(header.agent_task_id());
  get.set_history_length(0);
  absl::StatusOr<a2apb::Task> task = transport.GetTask(get, absl::Now() + options_.call_timeout);
  contacts_->RecordCall(agent.name(), "read back", task.status());
  if (!task.ok()) {
    if (a2a_protocol::Reason(task.status()) == a2a_protocol::kTaskNotFound) {
      // It restarted and forgot its tasks: the message goes again, as a new task at the agent.
      RETURN_IF_ERROR(tasks_->ForgetAgentTaskId(header.task().id(), header.agent_task_id()));
      return absl::UnavailableError(
          absl::StrCat("agent ", agent.name(), " no longer knows its task ", header.agent_task_id(),
                       " (it restarted?): the message goes again as a new task at the agent"));
    }
    if (absl::IsUnimplemented(task.status()) ||
        a2a_protocol::Reason(task.status()) == a2a_protocol::kUnsupportedOperation) {
      // An agent that keeps no tasks (the coordinator's own agent runtime): nothing to read
      // back, so the message goes again, as it always did.
      *resumed = false;
      return nullptr;
    }
    return KeepNotListening(
        task.status(),
        absl::UnavailableError(absl::StrCat("agent ", agent.name(), " at ", agent.endpoint(),
                                            ": cannot read back its task ", header.agent_task_id(),
                                            ": ", task.status().message())));
  }
  if (IsFinalOrInterrupted(task->status().state())) {
    // Its answer ended while nobody listened: the task as the agent has it is the outcome.
    a2apb::StreamResponse update;
    *update.mutable_task() = *std::move(task);
    RETURN_IF_ERROR(StoreBurst(delivery, absl::MakeConstSpan(&update, 1), remaining).status());
    return nullptr;
  }
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(header.agent_task_id());
  return transport.Subscribe(subscribe, absl::Now() + options_.stream_timeout);
}

absl::StatusOr<bool> A2AGateway::StoreBurst(const v1::PendingDelivery& delivery,
                                            absl::Span<const a2apb::StreamResponse> burst,
                                            std::optional<int64_t>* remaining) {
  // This thread does not wait for the burst's sync: nothing it does next shows the events to
  // anyone. Those who do (a blocking SendMessage, a subscriber, the next delivery of the task)
  // read them back, and a read waits for the durability of what it saw. What the store part
  // publishes for after the sync runs from the sync's completion.
  storage::Store* store = tasks_->store();
  storage::DurabilityScope scope(store);
  absl::StatusOr<A2ATasks::BurstResult> stored =
      tasks_->ApplyAgentBurst(delivery.task_id(), burst, delivery.history_seq());
  scope.Close();
  store->WhenDurable(scope.needed(), [actions = scope.TakeActions()](absl::Status durable) mutable {
    if (!durable.ok()) return;  // a failed sync is the store's to report
    for (storage::DurabilityScope::Action& action : actions) std::move(action)();
  });
  ASSIGN_OR_RETURN(A2ATasks::BurstResult applied, std::move(stored));
  // Only a burst that leaves the task final or interrupted dequeues the delivery.
  if (applied.delivery_done) *remaining = applied.change.header.pending_deliveries();
  return IsFinalOrInterrupted(applied.change.header.task().status().state());
}

}  // namespace coordinator
