#include "coordinator/a2a/grpc_transport.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/grpc_errors.h"
#include "a2a_protocol/v03_proto.h"
#include "a2a_protocol/version.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "common/reconnect.h"

namespace coordinator {
namespace {

namespace pb03 = ::a2a::v1;

// The wire of each A2A version: its service, its messages, how a call is stamped and how its
// answers and errors read as 1.0. The call and the unary calls below are written once over it.
struct Wire10 {
  using Service = a2apb::A2AService;
  using SendRequest = a2apb::SendMessageRequest;
  using SendReply = a2apb::SendMessageResponse;
  using SubscribeRequest = a2apb::SubscribeToTaskRequest;
  using Event = a2apb::StreamResponse;
  using Task = a2apb::Task;

  static void Stamp(grpc::ClientContext* context) { a2a_protocol::AddVersion(context); }
  static void Subscribe(Service::Stub* stub, grpc::ClientContext* context,
                        const SubscribeRequest* request, grpc::ClientReadReactor<Event>* reactor) {
    stub->async()->SubscribeToTask(context, request, reactor);
  }
  template <typename Request>
  static Request Out(const Request& request, const std::string& tenant) {
    Request sent = request;
    if (!tenant.empty()) sent.set_tenant(tenant);
    return sent;
  }
  static a2apb::StreamResponse In(Event&& event) { return std::move(event); }
  static a2apb::StreamResponse In(SendReply&& reply) {
    a2apb::StreamResponse event;
    if (reply.has_task()) *event.mutable_task() = std::move(*reply.mutable_task());
    if (reply.has_message()) *event.mutable_message() = std::move(*reply.mutable_message());
    return event;
  }
  static a2apb::Task In(Task&& task) { return std::move(task); }
  static absl::Status In(const grpc::Status& status) {
    return a2a_protocol::FromGrpcStatus(status);
  }
};

// A2A 0.3's service (package a2a.v1): no version header, no tenant, tasks named "tasks/{id}".
struct Wire03 {
  using Service = pb03::A2AService;
  using SendRequest = pb03::SendMessageRequest;
  using SendReply = pb03::SendMessageResponse;
  using SubscribeRequest = pb03::TaskSubscriptionRequest;
  using Event = pb03::StreamResponse;
  using Task = pb03::Task;

  static void Stamp(grpc::ClientContext*) {}
  static void Subscribe(Service::Stub* stub, grpc::ClientContext* context,
                        const SubscribeRequest* request, grpc::ClientReadReactor<Event>* reactor) {
    stub->async()->TaskSubscription(context, request, reactor);
  }
  template <typename Request>
  static auto Out(const Request& request, const std::string& /*tenant*/) {
    return a2a_protocol::v03::ToProto(request);
  }
  template <typename Answer>
  static auto In(const Answer& answer) {
    return a2a_protocol::v03::FromProto(answer);
  }
  static absl::Status In(const grpc::Status& status) {
    return a2a_protocol::v03::FromGrpcStatus(status);
  }
};

// The agent's event stream of one delivery, read ahead on gRPC's callback threads: events that
// arrive while the gateway stores the previous burst wait here (as 1.0) and are taken together.
// At most kMaxBurstEvents wait; beyond that reading pauses until they are taken. An agent without
// streaming (it answers the stream with UNIMPLEMENTED before any event, or its 0.3 card says so)
// gets the unary SendMessage, and its answer becomes the one event.
// `result`, the end of a call on `channel` as `status`, marked NotListening when no connection
// was made. gRPC reports a refused connection as UNAVAILABLE, as it does a server's own
// UNAVAILABLE or a connection that broke: only the channel's state tells them apart (pick_first
// keeps TRANSIENT_FAILURE until a connection is made). For a call that got no answer.
absl::Status MarkNotListening(const grpc::Status& status, grpc::Channel& channel,
                              absl::Status result) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return result;
  const grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/false);
  if (state != GRPC_CHANNEL_TRANSIENT_FAILURE && state != GRPC_CHANNEL_CONNECTING) return result;
  return NotListening(std::move(result));
}

template <typename Wire>
class GrpcAgentCall final : public AgentCall, public grpc::ClientReadReactor<typename Wire::Event> {
  using Reactor = grpc::ClientReadReactor<typename Wire::Event>;

 public:
  GrpcAgentCall(std::shared_ptr<grpc::Channel> channel, absl::Time deadline)
      : channel_(channel), stub_(Wire::Service::NewStub(std::move(channel))), deadline_(deadline) {
    context_.set_deadline(absl::ToChronoTime(deadline));
    Wire::Stamp(&context_);
  }

  // SendStreamingMessage, with the unary SendMessage for an agent without streaming; only the
  // unary one when `streams` is false.
  void StartSend(typename Wire::SendRequest request, bool streams) {
    request_ = std::move(request);
    sending_ = true;
    if (!streams) {
      StartUnary(&unary_context_.emplace());  // no other thread knows the call yet
      return;
    }
    stub_->async()->SendStreamingMessage(&context_, &request_, this);
    StartReading();
  }

  // SubscribeToTask.
  void StartSubscribe(typename Wire::SubscribeRequest request) {
    subscribe_request_ = std::move(request);
    Wire::Subscribe(stub_.get(), &context_, &subscribe_request_, this);
    StartReading();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended; OnDone follows
      absl::MutexLock lock(&mu_);
      reads_ended_ = true;
      return;
    }
    absl::AnyInvocable<void() &&> ready;  // WhenOpening's, once the opening is whole
    bool paused = false;
    {
      absl::MutexLock lock(&mu_);
      got_any_ = true;
      if (finishing_) {
        // Finish() has run: nobody takes events any more, so none is kept and reading never
        // pauses (a hold taken now would never be removed, and OnDone, which Finish() waits
        // for, would never come). The reads end when the call does.
      } else {
        queue_.push_back(Wire::In(std::move(incoming_)));
        if (opening_ready_ != nullptr && OpeningComplete(queue_, holds_, ends_)) {
          ready = std::move(opening_ready_);
          opening_ready_ = nullptr;
        }
        if (queue_.size() >= kMaxBurstEvents) {
          // Take() reads on. The hold keeps gRPC from ending the call (OnDone) while no read is
          // pending, so that Take() may still start one; Take() or Finish() removes it.
          paused_ = true;
          paused = true;
          this->AddHold();
        }
      }
    }
    if (!paused) {
      incoming_.Clear();
      this->StartRead(&incoming_);
    }
    // Last: it may take the events, store them and end the call (gRPC holds the call until
    // this reaction returns).
    if (ready != nullptr) std::move(ready)();
  }

  void OnDone(const grpc::Status& status) override {
    grpc::ClientContext* unary = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (sending_ && status.error_code() == grpc::StatusCode::UNIMPLEMENTED && !got_any_ &&
          !cancelled_) {
        // Made only now (most agents stream): a context costs allocations, and its cancel a
        // batch. A Cancel() from now on cancels it, before or after the call starts on it.
        unary = &unary_context_.emplace();
      }
    }
    if (unary != nullptr) {
      StartUnary(unary);
      return;
    }
    End(status);
  }

  size_t Take(std::vector<a2apb::StreamResponse>* out, absl::Time deadline) override {
    size_t taken;
    bool resume;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || done_; };
      mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
      taken = TakeBurst(&queue_, out);
      resume = paused_;
      paused_ = false;
    }
    if (resume) {  // OnReadDone stopped reading: no read is pending, incoming_ is ours
      incoming_.Clear();
      this->StartRead(&incoming_);
      this->RemoveHold();
    }
    return taken;
  }

  size_t TakeOpening(std::vector<a2apb::StreamResponse>* out, absl::Time linger_until,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> holds,
                     absl::FunctionRef<bool(const a2apb::StreamResponse&)> ends) override {
    {
      absl::MutexLock lock(&mu_);
      // gRPC's threads evaluate this as they queue events (absl::Mutex checks a waiter's
      // condition on unlock), so this thread sleeps until the burst is whole.
      auto complete = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return done_ || OpeningComplete(queue_, holds, ends);
      };
      mu_.AwaitWithDeadline(absl::Condition(&complete), linger_until);
    }
    // What waits now (all of it when the burst is whole); with nothing yet, the first event.
    return Take(out, absl::InfiniteFuture());
  }

  bool WhenOpening(std::function<bool(const a2apb::StreamResponse&)> holds,
                   std::function<bool(const a2apb::StreamResponse&)> ends,
                   absl::AnyInvocable<void() &&> ready) override {
    {
      absl::MutexLock lock(&mu_);
      holds_ = std::move(holds);
      ends_ = std::move(ends);
      if (!done_ && !OpeningComplete(queue_, holds_, ends_)) {
        opening_ready_ = std::move(ready);
        return true;
      }
    }
    std::move(ready)();
    return true;
  }

  void LingerPassed() override {
    absl::AnyInvocable<void() &&> ready;
    {
      absl::MutexLock lock(&mu_);
      ready = std::move(opening_ready_);
      opening_ready_ = nullptr;
    }
    if (ready != nullptr) std::move(ready)();
  }

  void WhenFinished(absl::AnyInvocable<void(absl::Status) &&> done) override {
    bool release;
    bool ended;
    absl::Status result;
    {
      absl::MutexLock lock(&mu_);
      release = paused_;
      paused_ = false;
      finishing_ = true;  // as in Finish()
      ended = done_;
      if (ended) {
        result = result_;
      } else {
        finished_ready_ = std::move(done);  // End() runs it
      }
    }
    if (release) this->RemoveHold();  // may end the call, and End() run `done`, on this thread
    if (ended) std::move(done)(std::move(result));
  }

  void Cancel() override {
    bool ended;
    grpc::ClientContext* unary;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      // The agent ended its stream (most do right after the event that ends their turn): the
      // call ends by itself, and cancelling it would only cost gRPC a cancel batch.
      ended = reads_ended_ || done_;
      unary = unary_context_.has_value() ? &*unary_context_ : nullptr;
    }
    if (!ended) context_.TryCancel();
    // Made before cancelled_ was set, so its call may run: cancelled before its start (a flag)
    // or during it. Outside mu_: gRPC may run OnUnaryDone on this thread.
    if (unary != nullptr) unary->TryCancel();
  }

  absl::Status Finish() override {
    bool release;
    {
      absl::MutexLock lock(&mu_);
      release = paused_;
      paused_ = false;
      finishing_ = true;  // under mu_ with the check above: OnReadDone pauses before or never
    }
    if (release) this->RemoveHold();  // the call may end now (it was cancelled, or ends by itself)
    finished_.WaitForNotification();
    absl::MutexLock lock(&mu_);
    return result_;
  }

 private:
  void StartReading() {
    this->StartRead(&incoming_);
    this->StartCall();
  }

  // The unary SendMessage on `unary` (unary_context_).
  void StartUnary(grpc::ClientContext* unary) {
    unary->set_deadline(absl::ToChronoTime(deadline_));
    Wire::Stamp(unary);
    stub_->async()->SendMessage(unary, &request_, &reply_,
                                [this](grpc::Status s) { OnUnaryDone(s); });
  }

  void OnUnaryDone(const grpc::Status& status) {
    if (status.ok()) {
      a2apb::StreamResponse update = Wire::In(std::move(reply_));
      absl::MutexLock lock(&mu_);
      queue_.push_back(std::move(update));
    }
    End(status);
  }

  void End(const grpc::Status& status) {
    absl::Status result = Wire::In(status);
    absl::AnyInvocable<void() &&> ready;
    absl::AnyInvocable<void(absl::Status) &&> finished;
    {
      absl::MutexLock lock(&mu_);
      if (!got_any_ && !cancelled_) result = MarkNotListening(status, *channel_, std::move(result));
      result_ = result;
      done_ = true;
      ready = std::move(opening_ready_);
      opening_ready_ = nullptr;
      finished = std::move(finished_ready_);
      finished_ready_ = nullptr;
    }
    finished_.Notify();
    // The last touches of this object by gRPC's threads: either may destroy it.
    if (ready != nullptr) {
      std::move(ready)();
    } else if (finished != nullptr) {
      std::move(finished)(std::move(result));
    }
  }

  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<typename Wire::Service::Stub> stub_;
  typename Wire::SendRequest request_;                 // when sending_
  typename Wire::SubscribeRequest subscribe_request_;  // otherwise
  bool sending_ = false;
  grpc::ClientContext context_;
  const absl::Time deadline_;
  // Made by OnDone, under mu_, for an agent that answers the stream with UNIMPLEMENTED; never
  // reset, so a pointer taken under mu_ stays good for the call's life.
  std::optional<grpc::ClientContext> unary_context_ ABSL_GUARDED_BY(mu_);
  typename Wire::Event incoming_;   // written by gRPC while a read is pending
  typename Wire::SendReply reply_;  // written by gRPC during the unary call
  absl::Mutex mu_;
  std::deque<a2apb::StreamResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool got_any_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish() was called
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_ended_ ABSL_GUARDED_BY(mu_) = false;  // OnReadDone(false): no more events come
  absl::Status result_ ABSL_GUARDED_BY(mu_);       // how the call ended, as Finish reports it
  absl::Notification finished_;
  // WhenOpening's and WhenFinished's callbacks, each run once (taken under mu_).
  std::function<bool(const a2apb::StreamResponse&)> holds_ ABSL_GUARDED_BY(mu_);
  std::function<bool(const a2apb::StreamResponse&)> ends_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void() &&> opening_ready_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void(absl::Status) &&> finished_ready_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

namespace {

// One unary call of the A2A service that answers with a Task, on `Wire`: the request as the
// wire has it, stamped, and `deadline` kept.
template <typename Wire, typename Request>
absl::StatusOr<a2apb::Task> CallForTask(
    const std::shared_ptr<grpc::Channel>& channel, const Request& request, absl::Time deadline,
    grpc::Status (Wire::Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                typename Wire::Task*)) {
  typename Wire::Service::Stub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  Wire::Stamp(&context);
  typename Wire::Task reply;
  const grpc::Status status = (stub.*method)(&context, request, &reply);
  if (!status.ok()) return MarkNotListening(status, *channel, Wire::In(status));
  return Wire::In(std::move(reply));
}

template <typename Wire>
std::unique_ptr<AgentCall> Send(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& tenant, bool streams,
                                const a2apb::SendMessageRequest& request, absl::Time deadline) {
  auto call = std::make_unique<GrpcAgentCall<Wire>>(channel, deadline);
  call->StartSend(Wire::Out(request, tenant), streams);
  return call;
}

template <typename Wire>
std::unique_ptr<AgentCall> Subscribe(const std::shared_ptr<grpc::Channel>& channel,
                                     const std::string& tenant,
                                     const a2apb::SubscribeToTaskRequest& request,
                                     absl::Time deadline) {
  auto call = std::make_unique<GrpcAgentCall<Wire>>(channel, deadline);
  call->StartSubscribe(Wire::Out(request, tenant));
  return call;
}

}  // namespace

std::unique_ptr<AgentCall> GrpcAgentTransport::SendStreaming(
    const a2apb::SendMessageRequest& request, absl::Time deadline) {
  return version_ == Version::k03 ? Send<Wire03>(channel_, tenant_, streams_, request, deadline)
                                  : Send<Wire10>(channel_, tenant_, true, request, deadline);
}

std::unique_ptr<AgentCall> GrpcAgentTransport::Subscribe(
    const a2apb::SubscribeToTaskRequest& request, absl::Time deadline) {
  return version_ == Version::k03
             ? coordinator::Subscribe<Wire03>(channel_, tenant_, request, deadline)
             : coordinator::Subscribe<Wire10>(channel_, tenant_, request, deadline);
}

absl::StatusOr<a2apb::Task> GrpcAgentTransport::CancelTask(const a2apb::CancelTaskRequest& request,
                                                           absl::Time deadline) {
  if (version_ == Version::k03) {
    return CallForTask<Wire03>(channel_, Wire03::Out(request, tenant_), deadline,
                               &Wire03::Service::Stub::CancelTask);
  }
  return CallForTask<Wire10>(channel_, Wire10::Out(request, tenant_), deadline,
                             &Wire10::Service::Stub::CancelTask);
}

absl::StatusOr<a2apb::Task> GrpcAgentTransport::GetTask(const a2apb::GetTaskRequest& request,
                                                        absl::Time deadline) {
  if (version_ == Version::k03) {
    return CallForTask<Wire03>(channel_, Wire03::Out(request, tenant_), deadline,
                               &Wire03::Service::Stub::GetTask);
  }
  return CallForTask<Wire10>(channel_, Wire10::Out(request, tenant_), deadline,
                             &Wire10::Service::Stub::GetTask);
}

std::shared_ptr<grpc::Channel> NewAgentChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  // An agent that comes back is reached within a second.
  common::SetQuickReconnect(args);
  args.SetMaxReceiveMessageSize(64 << 20);
  absl::string_view target = endpoint;
  if (absl::ConsumePrefix(&target, "https://")) {
    return grpc::CreateCustomChannel(std::string(target),
                                     grpc::SslCredentials(grpc::SslCredentialsOptions()), args);
  }
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

}  // namespace coordinator
