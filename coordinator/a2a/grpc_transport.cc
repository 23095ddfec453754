#include "coordinator/a2a/grpc_transport.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/grpc_errors.h"
#include "a2a_protocol/version.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "common/reconnect.h"

namespace coordinator {
namespace {

// The agent's event stream of one delivery, read ahead on gRPC's callback threads: events that
// arrive while the gateway stores the previous burst wait here and are taken together. At most
// kMaxBurstEvents wait; beyond that reading pauses until they are taken. An agent that answers
// the stream with UNIMPLEMENTED before any event (no streaming) gets the unary SendMessage, and
// its answer becomes the one event.
class GrpcAgentCall final : public AgentCall,
                            public grpc::ClientReadReactor<a2apb::StreamResponse> {
 public:
  GrpcAgentCall(std::shared_ptr<grpc::Channel> channel, absl::Time deadline)
      : stub_(a2apb::A2AService::NewStub(std::move(channel))), deadline_(deadline) {
    context_.set_deadline(absl::ToChronoTime(deadline));
    a2a_protocol::AddVersion(&context_);
  }

  // SendStreamingMessage, with the unary SendMessage for an agent without streaming.
  void StartSend(a2apb::SendMessageRequest request) {
    request_ = std::move(request);
    sending_ = true;
    stub_->async()->SendStreamingMessage(&context_, &request_, this);
    StartReading();
  }

  // SubscribeToTask.
  void StartSubscribe(a2apb::SubscribeToTaskRequest request) {
    subscribe_request_ = std::move(request);
    stub_->async()->SubscribeToTask(&context_, &subscribe_request_, this);
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
        queue_.push_back(std::move(incoming_));
        if (opening_ready_ != nullptr && OpeningComplete(queue_, holds_, ends_)) {
          ready = std::move(opening_ready_);
          opening_ready_ = nullptr;
        }
        if (queue_.size() >= kMaxBurstEvents) {
          // Take() reads on. The hold keeps gRPC from ending the call (OnDone) while no read is
          // pending, so that Take() may still start one; Take() or Finish() removes it.
          paused_ = true;
          paused = true;
          AddHold();
        }
      }
    }
    if (!paused) {
      incoming_.Clear();
      StartRead(&incoming_);
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
        unary->set_deadline(absl::ToChronoTime(deadline_));
        a2a_protocol::AddVersion(unary);
      }
    }
    if (unary != nullptr) {
      stub_->async()->SendMessage(unary, &request_, &reply_,
                                  [this](grpc::Status s) { OnUnaryDone(s); });
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
      StartRead(&incoming_);
      RemoveHold();
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
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      release = paused_;
      paused_ = false;
      finishing_ = true;  // as in Finish()
      ended = done_;
      if (ended) {
        status = status_;
      } else {
        finished_ready_ = std::move(done);  // End() runs it
      }
    }
    if (release) RemoveHold();  // may end the call, and End() run `done`, on this thread
    if (ended) std::move(done)(a2a_protocol::FromGrpcStatus(status));
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
    if (release) RemoveHold();  // the call may end now (it was cancelled, or ends by itself)
    finished_.WaitForNotification();
    absl::MutexLock lock(&mu_);
    return a2a_protocol::FromGrpcStatus(status_);
  }

 private:
  void StartReading() {
    StartRead(&incoming_);
    StartCall();
  }

  void OnUnaryDone(const grpc::Status& status) {
    if (status.ok()) {
      a2apb::StreamResponse update;
      if (reply_.has_task()) *update.mutable_task() = std::move(*reply_.mutable_task());
      if (reply_.has_message()) *update.mutable_message() = std::move(*reply_.mutable_message());
      absl::MutexLock lock(&mu_);
      queue_.push_back(std::move(update));
    }
    End(status);
  }

  void End(const grpc::Status& status) {
    absl::AnyInvocable<void() &&> ready;
    absl::AnyInvocable<void(absl::Status) &&> finished;
    {
      absl::MutexLock lock(&mu_);
      status_ = status;
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
      std::move(finished)(a2a_protocol::FromGrpcStatus(status));
    }
  }

  std::unique_ptr<a2apb::A2AService::Stub> stub_;
  a2apb::SendMessageRequest request_;                // when sending_
  a2apb::SubscribeToTaskRequest subscribe_request_;  // otherwise
  bool sending_ = false;
  grpc::ClientContext context_;
  const absl::Time deadline_;
  // Made by OnDone, under mu_, for an agent that answers the stream with UNIMPLEMENTED; never
  // reset, so a pointer taken under mu_ stays good for the call's life.
  std::optional<grpc::ClientContext> unary_context_ ABSL_GUARDED_BY(mu_);
  a2apb::StreamResponse incoming_;    // written by gRPC while a read is pending
  a2apb::SendMessageResponse reply_;  // written by gRPC during the unary call
  absl::Mutex mu_;
  std::deque<a2apb::StreamResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool got_any_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish() was called
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_ended_ ABSL_GUARDED_BY(mu_) = false;  // OnReadDone(false): no more events come
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Notification finished_;
  // WhenOpening's and WhenFinished's callbacks, each run once (taken under mu_).
  std::function<bool(const a2apb::StreamResponse&)> holds_ ABSL_GUARDED_BY(mu_);
  std::function<bool(const a2apb::StreamResponse&)> ends_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void() &&> opening_ready_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void(absl::Status) &&> finished_ready_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<AgentCall> GrpcAgentTransport::SendStreaming(
    const a2apb::SendMessageRequest& request, absl::Time deadline) {
  a2apb::SendMessageRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  auto call = std::make_unique<GrpcAgentCall>(channel_, deadline);
  call->StartSend(std::move(sent));
  return call;
}

std::unique_ptr<AgentCall> GrpcAgentTransport::Subscribe(
    const a2apb::SubscribeToTaskRequest& request, absl::Time deadline) {
  a2apb::SubscribeToTaskRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  auto call = std::make_unique<GrpcAgentCall>(channel_, deadline);
  call->StartSubscribe(std::move(sent));
  return call;
}

namespace {

// One unary call of the A2A service that answers with a Task: `sent` with the tenant set, the
// A2A version stamped and `deadline` kept.
template <typename Request>
absl::StatusOr<a2apb::Task> CallForTask(const std::shared_ptr<grpc::Channel>& channel,
                                        const std::string& tenant, Request sent,
                                        absl::Time deadline,
                                        grpc::Status (a2apb::A2AService::Stub::*method)(
                                            grpc::ClientContext*, const Request&, a2apb::Task*)) {
  a2apb::A2AService::Stub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  a2a_protocol::AddVersion(&context);
  if (!tenant.empty()) sent.set_tenant(tenant);
  a2apb::Task reply;
  const grpc::Status status = (stub.*method)(&context, sent, &reply);
  if (!status.ok()) return a2a_protocol::FromGrpcStatus(status);
  return reply;
}

}  // namespace

absl::StatusOr<a2apb::Task> GrpcAgentTransport::CancelTask(const a2apb::CancelTaskRequest& request,
                                                           absl::Time deadline) {
  return CallForTask(channel_, tenant_, request, deadline, &a2apb::A2AService::Stub::CancelTask);
}

absl::StatusOr<a2apb::Task> GrpcAgentTransport::GetTask(const a2apb::GetTaskRequest& request,
                                                        absl::Time deadline) {
  return CallForTask(channel_, tenant_, request, deadline, &a2apb::A2AService::Stub::GetTask);
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
