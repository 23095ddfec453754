// How the gateway reaches an agent: one interface over the three A2A bindings (GRPC, JSONRPC,
// HTTP+JSON). A transport only converts: it puts the coordinator's SendMessageRequest on its
// binding's wire and hands the agent's answer back as lf.a2a.v1.StreamResponse values and one
// absl::Status (the A2A reason kept, as a2a_protocol/errors.h builds it). Everything after it
// (storing bursts, dequeuing, retries and backoff, push) is the gateway's one code path for
// every binding. Implementations: grpc_transport.h and http_transport.h.
#ifndef COORDINATOR_A2A_AGENT_TRANSPORT_H_
#define COORDINATOR_A2A_AGENT_TRANSPORT_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/url_allow_list.h"
#include "coordinator/v1/agent_registry.pb.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

// Bounds of one burst of agent events taken at once (the gateway stores a burst in one
// transaction). A call reads at most kMaxBurstEvents ahead; beyond that it stops reading until
// the gateway takes them.
inline constexpr size_t kMaxBurstEvents = 64;
inline constexpr size_t kMaxBurstBytes = 4 << 20;

// Marks a failed call that found nothing listening at the agent's address: the connection was
// refused or could not be made (the agent is down or not started), as opposed to an agent that
// took the call and failed it or broke it off. The gateway spends none of a message's attempts
// on such calls (GatewayOptions::delivery_ttl bounds them instead).
absl::Status NotListening(absl::Status status);
bool IsNotListening(const absl::Status& status);
// `status` marked NotListening when `cause` is: for an error that rewords another.
absl::Status KeepNotListening(const absl::Status& cause, absl::Status status);

// The agent's answer to one message, in flight. Its transport reads the answer ahead of the
// gateway; the gateway takes what waits in bursts. Thread-safe.
//
// How Finish reports the end, for every binding: OK when the agent ended its answer cleanly;
// UNAVAILABLE when it could not be reached or the connection broke (marked NotListening when
// nothing took the connection at all); DEADLINE_EXCEEDED when the
// call's deadline passed; CANCELLED after Cancel; INTERNAL with reason INVALID_AGENT_RESPONSE
// when the answer does not parse; otherwise the agent's own error, with its code and A2A reason.
class AgentCall {
 public:
  virtual ~AgentCall() = default;

  // Waits for an event, the end of the answer or `deadline`, then appends the waiting events (in
  // order; up to kMaxBurstEvents and about kMaxBurstBytes in `out`) to `out`. Returns how many it
  // appended: 0 when the answer has ended (or the deadline passed) with none waiting.
  virtual size_t Take(std::vector<a2apb::StreamResponse>* out,
                      absl::Time deadline = absl::InfiniteFuture()) = 0;
  // Take for the first burst of an answer, waking the taker once for what belongs together: when
  // the first event waiting `holds` (an opening snapshot that changes nothing by itself), waits
  // on until a later one `ends` the turn, kMaxBurstEvents wait, the answer ends, or
  // `linger_until` passes, then takes them together. After `linger_until` with nothing waiting
  // it is Take. This default is Take; a transport that reads ahead on its own threads overrides
  // it to check the condition there as events arrive, so the taker is not woken per event.
  virtual size_t TakeOpening(std::vector<a2apb::StreamResponse>* out, absl::Time /*linger_until*/,
                             absl::FunctionRef<bool(const a2apb::StreamResponse&)> /*holds*/,
                             absl::FunctionRef<bool(const a2apb::StreamResponse&)> /*ends*/) {
    return Take(out);
  }
  // The asynchronous form of TakeOpening, for a transport that reads ahead on its own threads;
  // returns false (keeping nothing) when the transport cannot. `ready` runs once, on one of the
  // transport's threads (or on this one before WhenOpening returns), as soon as TakeOpening would
  // return without waiting, or on the thread that calls LingerPassed first; it then takes what
  // waits with Take (which does not wait then), and goes on with Take or ends the call with
  // WhenFinished. The caller keeps the linger's time (one timer for all calls).
  virtual bool WhenOpening(std::function<bool(const a2apb::StreamResponse&)> /*holds*/,
                           std::function<bool(const a2apb::StreamResponse&)> /*ends*/,
                           absl::AnyInvocable<void() &&> /*ready*/) {
    return false;
  }
  // The opening's linger has passed: WhenOpening's `ready` runs now on this thread, unless it ran.
  virtual void LingerPassed() {}
  // Finish without waiting, after a WhenOpening that returned true: `done` runs once with how the
  // call ended (as Finish reports it), on a transport thread when it ends, or on this thread when
  // it has ended already. It is the transport's last touch of the call, which `done` may destroy.
  virtual void WhenFinished(absl::AnyInvocable<void(absl::Status) &&> done) {
    std::move(done)(Finish());
  }
  // Ends the call early, from any thread: the gateway has what it needs, or it is stopping.
  // Idempotent; Take then returns what still waits and 0 after it.
  virtual void Cancel() = 0;
  // Waits until the transport is done with the call and returns how it ended (see above). Call
  // it once, last; the call may be destroyed after it.
  [[nodiscard]] virtual absl::Status Finish() = 0;
};

class AgentTransport {
 public:
  virtual ~AgentTransport() = default;

  // Sends `request` as SendStreamingMessage and returns the call that reads the agent's answer,
  // which ends by `deadline`. Never null: a call that cannot start ends at once with its status.
  // An agent without streaming (UNIMPLEMENTED, JSON-RPC "method not found") is sent the unary
  // SendMessage instead, and an agent that answers the stream with one plain JSON body is read as
  // that one answer: either way its Task or Message arrives as one StreamResponse.
  virtual std::unique_ptr<AgentCall> SendStreaming(const a2apb::SendMessageRequest& request,
                                                   absl::Time deadline) = 0;
  // Forwards CancelTask; blocks until the agent answers or `deadline`.
  [[nodiscard]] virtual absl::StatusOr<a2apb::Task> CancelTask(
      const a2apb::CancelTaskRequest& request, absl::Time deadline) = 0;
  // Forwards GetTask; blocks until the agent answers or `deadline`.
  [[nodiscard]] virtual absl::StatusOr<a2apb::Task> GetTask(const a2apb::GetTaskRequest& request,
                                                            absl::Time deadline) = 0;
  // Opens SubscribeToTask and returns the call that reads the agent's answer (its Task, then the
  // task's updates), which ends by `deadline`. Never null, as SendStreaming; there is no unary
  // fallback.
  virtual std::unique_ptr<AgentCall> Subscribe(const a2apb::SubscribeToTaskRequest& request,
                                               absl::Time deadline) = 0;
};

struct AgentTransportOptions {
  // Hosts the interface of an agent registered by card URL may name (--outbound_allow_hosts;
  // default loopback only). Checked again before every call, as webhooks are.
  common::HostAllowList outbound_allow;
  // Largest single event, or plain JSON answer, an HTTP agent may send (default 64 MiB, the
  // gRPC agent channel's receive limit); a larger one is an INVALID_AGENT_RESPONSE.
  size_t max_event_bytes = 64 << 20;
  // How long an HTTP agent may take to accept the connection (default 10s, --a2a_call_timeout);
  // the answer itself may take until the call's deadline.
  absl::Duration connect_timeout = absl::Seconds(10);
};

// Makes the transport of a registered agent for its protocol_binding, with the tenant of the
// card interface it was registered over. Keeps one gRPC channel per endpoint. Thread-safe.
class AgentTransports {
 public:
  explicit AgentTransports(AgentTransportOptions options) : options_(std::move(options)) {}

  // INVALID_ARGUMENT for a binding or endpoint the gateway cannot use; PERMISSION_DENIED when the
  // agent was registered by card URL and its endpoint's host is no longer allowed.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<AgentTransport>> For(const v1::Agent& agent);

 private:
  std::shared_ptr<grpc::Channel> ChannelFor(const std::string& endpoint);

  const AgentTransportOptions options_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

// Moves the events at the front of `queue` to `out`, in order, up to kMaxBurstEvents in `out`
// and about kMaxBurstBytes. Returns how many it moved. (Shared by the transports' read-ahead
// queues.)
size_t TakeBurst(std::deque<a2apb::StreamResponse>* queue, std::vector<a2apb::StreamResponse>* out);
// Whether the events waiting in `queue` are a whole opening burst for TakeOpening: some wait,
// and the first does not `hold`, or a later one `ends` the turn, or kMaxBurstEvents wait.
bool OpeningComplete(const std::deque<a2apb::StreamResponse>& queue,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> holds,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> ends);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_AGENT_TRANSPORT_H_
