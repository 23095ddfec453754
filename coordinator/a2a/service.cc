#include "coordinator/a2a/service.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/version.h"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/stream_writer.h"
#include "coordinator/a2a/service_v03.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "coordinator/rpc/unary_handler.h"
#include "storage/durability_scope.h"
#include "storage/store.h"

namespace coordinator {
namespace {

// Events read from the log per store read while streaming.
constexpr int kEventBatch = 100;

std::optional<int> HistoryLength(const a2apb::SendMessageRequest& request) {
  if (request.configuration().has_history_length()) return request.configuration().history_length();
  return std::nullopt;
}

// A call's subscription to the changes of its task, dropped when gRPC is done with the call. The
// call may be done before it subscribes: that subscription is dropped at once.
class TaskSubscription {
 public:
  explicit TaskSubscription(TaskNotifier* notifier) : notifier_(notifier) {}

  // Calls `listener` after each change of `task_id` until End(). False when End() came first:
  // the call is over, and nothing stays subscribed.
  bool Subscribe(const std::string& task_id, TaskNotifier::Listener listener) {
    const uint64_t id = notifier_->Subscribe(task_id, std::move(listener));
    {
      absl::MutexLock lock(&mu_);
      if (!ended_) {
        task_id_ = task_id;
        id_ = id;
        return true;
      }
    }
    notifier_->Unsubscribe(task_id, id);
    return false;
  }

  // From OnDone. The notifier's lock is never taken under mu_.
  void End() {
    uint64_t id;
    std::string task_id;
    {
      absl::MutexLock lock(&mu_);
      ended_ = true;
      id = id_;
      task_id = task_id_;
    }
    if (id != 0) notifier_->Unsubscribe(task_id, id);
  }

 private:
  TaskNotifier* const notifier_;
  absl::Mutex mu_;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t id_ ABSL_GUARDED_BY(mu_) = 0;
  std::string task_id_ ABSL_GUARDED_BY(mu_);
};

// A blocking (or immediate) SendMessage. Owns itself from creation to OnDone; pool jobs, the
// durability completion and the notifier listener hold references, and `finished_` keeps late
// ones from touching the call.
//
// Accepting the message is a short transaction: while the store's writes do not block, it runs
// on the gRPC thread that received the call, in a DurabilityScope (it commits without waiting for
// the WAL sync), and the call goes on from the sync's completion: no pool hop and no thread
// waiting for the disk. Otherwise it runs on the work pool, which waits for the sync.
class SendCall : public grpc::ServerUnaryReactor, public std::enable_shared_from_this<SendCall> {
 public:
  SendCall(A2AServiceImpl* service, grpc::CallbackServerContext* context,
           const a2apb::SendMessageRequest* request, a2apb::SendMessageResponse* response)
      : service_(service),
        context_(context),
        request_(request),
        response_(response),
        history_length_(HistoryLength(*request)),
        return_immediately_(request->configuration().return_immediately()),
        subscription_(service->gateway()->notifier()) {}

  static SendCall* Begin(A2AServiceImpl* service, grpc::CallbackServerContext* context,
                         const a2apb::SendMessageRequest* request,
                         a2apb::SendMessageResponse* response) {
    auto call = std::make_shared<SendCall>(service, context, request, response);
    call->self_ = call;
    // A new call: refused at once when --max_queued_calls calls already wait for a worker or
    // for the disk.
    absl::Status admitted = service->calls()->Admit();
    if (admitted.ok() && !service->calls()->store()->WritesMayBlock()) {
      call->AcceptHere();
      return call.get();
    }
    if (admitted.ok()) admitted = service->pool()->TrySchedule([call] { call->Run(); });
    if (!admitted.ok()) {
      {
        absl::MutexLock lock(&call->mu_);
        call->accepting_ = false;  // nothing accepts
      }
      call->FinishOnce(admitted);
    }
    return call.get();
  }

  // While the message is being accepted the request and the context are still read, and
  // finishing would let gRPC free them: the cancel is then left for the acceptance to apply once
  // it is done with them.
  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      if (accepting_) {
        cancelled_ = true;
        return;
      }
    }
    FinishOnce(absl::CancelledError("call cancelled by the client"));
  }

  void OnDone() override {
    subscription_.End();
    self_.reset();  // may delete this
  }

 private:
  // On the gRPC thread: the acceptance commits without waiting for the sync; the rest follows
  // from the sync's completion (on the store's syncer thread, or here when already durable).
  void AcceptHere() {
    storage::Store* store = service_->calls()->store();
    storage::DurabilityScope scope(store);
    absl::StatusOr<A2ATasks::Change> change = service_->Accept(context_, *request_);
    scope.Close();
    const bool cancelled = DoneAccepting();
    CallRunner* calls = service_->calls();
    calls->BeginDiskWait();
    store->WhenDurable(scope.needed(),
                       [call = shared_from_this(), calls, cancelled, change = std::move(change),
                        actions = scope.TakeActions()](absl::Status durable) mutable {
                         calls->EndDiskWait();
                         // An outcome may rest on a write that was not made durable: a failed sync
                         // fails it.
                         if (!durable.ok()) {
                           call->FinishOnce(durable);
                           return;
                         }
                         for (storage::DurabilityScope::Action& action : actions)
                           std::move(action)();
                         call->Accepted(std::move(change), cancelled, /*on_pool=*/false);
                       });
  }

  // On the work pool: the acceptance waits for the sync on this thread.
  void Run() {
    absl::StatusOr<A2ATasks::Change> change = service_->Accept(context_, *request_);
    const bool cancelled = DoneAccepting();
    Accepted(std::move(change), cancelled, /*on_pool=*/true);
  }

  // From here on nothing reads request_ or context_. True when the client cancelled meanwhile.
  bool DoneAccepting() {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    return cancelled_;
  }

  // The acceptance is durable: its delivery is dispatched, and the call answers at once
  // (return_immediately: its blocking reads on the work pool, never on the syncer that runs
  // this as a completion) or once the agent's turn has ended (Check).
  void Accepted(absl::StatusOr<A2ATasks::Change> change, bool cancelled, bool on_pool) {
    if (change.ok()) service_->gateway()->Accepted(*change);
    if (cancelled) {
      FinishOnce(absl::CancelledError("call cancelled by the client"));
      return;
    }
    if (!change.ok()) {
      FinishOnce(change.status());
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      task_id_ = change->header.task().id();
      sent_seq_ = change->sent_seq;
    }
    std::shared_ptr<SendCall> self = shared_from_this();
    if (return_immediately_) {
      if (on_pool) {
        RespondNow();
      } else {
        service_->pool()->Schedule([self] { self->RespondNow(); });
      }
      return;
    }
    std::weak_ptr<SendCall> weak = self;
    const bool subscribed = subscription_.Subscribe(task_id_, [weak] {
      if (auto call = weak.lock()) call->CheckSoon();
    });
    if (!subscribed) return;  // gRPC is done with the call
    // The task may have moved on before the subscription.
    if (on_pool) {
      Check();
    } else {
      CheckSoon();
    }
  }

  // Check where it costs least: on the thread that published the change (a delivery thread,
  // gRPC's, a syncer running this call's completion), since its reads, in a DurabilityScope,
  // never wait. On a store whose calls may block (etcd; RocksDB stalling), on the work pool.
  void CheckSoon() {
    if (service_->calls()->store()->WritesMayBlock()) {
      service_->pool()->Schedule([call = shared_from_this()] { call->Check(); });
      return;
    }
    Check();
  }

  // Reads in a DurabilityScope: the answer goes from the completion of the sync that covers
  // what it read (at once when that is durable already), so this thread never waits for it.
  void Check() {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
    }
    storage::Store* store = service_->calls()->store();
    storage::DurabilityScope scope(store);
    absl::StatusOr<v1::StoredTask> header = service_->tasks()->GetHeader(task_id_);
    absl::StatusOr<a2apb::SendMessageResponse> answer;
    if (!header.ok()) {
      answer = header.status();  // the task was deleted meanwhile: shown once that is durable
    } else if (!IsFinalOrInterrupted(header->task().status().state())) {
      return;  // nothing to show yet
    } else {
      // The turn has ended: the agent's answer, a Message or the task, from the header read.
      answer = service_->tasks()->SendAnswer(*header, sent_seq_, history_length_);
    }
    scope.Close();
    CallRunner* calls = service_->calls();
    calls->BeginDiskWait();
    store->WhenDurable(scope.needed(), [call = shared_from_this(), calls,
                                        answer = std::move(answer)](absl::Status durable) mutable {
      calls->EndDiskWait();
      if (!durable.ok()) {
        call->FinishOnce(durable);
        return;
      }
      call->Respond(std::move(answer));
    });
  }

  // return_immediately: the task as stored now, even if the agent has already answered with a
  // Message.
  void RespondNow() {
    absl::StatusOr<a2apb::Task> task = service_->tasks()->GetTask("", task_id_, history_length_);
    absl::StatusOr<a2apb::SendMessageResponse> answer;
    if (task.ok()) {
      *answer.emplace().mutable_task() = *std::move(task);
    } else {
      answer = task.status();
    }
    Respond(std::move(answer));
  }

  // May run in several pool jobs at once (one per notification); only the first finishes the
  // call, after which gRPC frees the request: so nothing here or in its callers reads request_.
  void Respond(absl::StatusOr<a2apb::SendMessageResponse> answer) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    if (answer.ok()) *response_ = *std::move(answer);
    Finish(common::ToGrpcStatus(answer.status()));
  }

  void FinishOnce(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    Finish(common::ToGrpcStatus(status));
  }

  A2AServiceImpl* service_;
  grpc::CallbackServerContext* context_;
  const a2apb::SendMessageRequest* request_;
  a2apb::SendMessageResponse* response_;
  // Copied from the request at the start: the request is gone once the call finished.
  const std::optional<int> history_length_;
  const bool return_immediately_;
  std::shared_ptr<SendCall> self_;
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;   // request_ and context_ may still be read
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // cancelled while accepting_
  std::string task_id_;   // set by Accepted under mu_, before any subscription
  int64_t sent_seq_ = 0;  // the message's history seq; as task_id_
  TaskSubscription subscription_;
};

// A stream of one task: the stored snapshot first, then every later event from the log, in
// order, until the task stops. Events are always read back from the store, so nothing that was
// stored after the snapshot can be missed, and nothing reaches a client before it is stored.
// The writer (common/stream_writer.h) owns the queue, the writes, finishing and the stream's life.
class TaskStream final : public common::StreamWriter<a2apb::StreamResponse> {
 public:
  // kSend: SendStreamingMessage (ends when the task stops or waits for input);
  // kSubscribe: SubscribeToTask (ends when the task reaches a terminal state).
  enum class Mode { kSend, kSubscribe };

  TaskStream(A2AServiceImpl* service, grpc::CallbackServerContext* context, Mode mode,
             std::unique_ptr<StreamSlots::Slot> slot)
      : StreamWriter(service->stream_queue_limit(), OverflowStatus(service->stream_queue_limit())),
        service_(service),
        context_(context),
        mode_(mode),
        slot_(std::move(slot)),
        subscription_(service->gateway()->notifier()) {}

  // `slot` (may be null) is held until gRPC is done with the stream.
  static TaskStream* Begin(A2AServiceImpl* service, grpc::CallbackServerContext* context,
                           const a2apb::SendMessageRequest* send,
                           const a2apb::SubscribeToTaskRequest* subscribe,
                           std::unique_ptr<StreamSlots::Slot> slot) {
    std::shared_ptr<TaskStream> stream = common::MakeStream<TaskStream>(
        service, context, send != nullptr ? Mode::kSend : Mode::kSubscribe, std::move(slot));
    // As in SendCall: while Start() still reads the request and the context, a cancel waits.
    stream->HoldFinish();
    // Set before anything can finish the stream; dropped in OnStreamDone.
    stream->revocation_ = OnCallerTokenRevoked(
        context, common::Aborter(stream->weak_from_this(), TokenRevokedStatus()));
    // A new stream: refused at once when the work pool's queue is full (--max_queued_calls).
    if (absl::Status queued = service->pool()->TrySchedule(
            [stream, send, subscribe] { stream->Start(send, subscribe); });
        !queued.ok()) {
      stream->Abort(common::ToGrpcStatus(queued));
      (void)stream->ReleaseFinish();
    }
    return stream.get();
  }

 private:
  // The client reads slower than the task changes: rather than hold ever more events for it,
  // the stream ends. Nothing is lost: every event stays in the task's log, and a new
  // subscription starts from the task as stored.
  static grpc::Status OverflowStatus(size_t limit) {
    return common::ToGrpcStatus(absl::ResourceExhaustedError(absl::StrCat(
        "this stream fell more than ", limit,
        " events behind (--stream_queue_limit); resubscribe with SubscribeToTask: it starts "
        "from the task as stored, and every event stays in the task's log")));
  }

  void OnStreamDone() override {
    subscription_.End();
    revocation_.reset();
  }

  std::shared_ptr<TaskStream> Self() {
    return std::static_pointer_cast<TaskStream>(shared_from_this());
  }

  bool Ends(a2apb::TaskState state) const {
    return mode_ == Mode::kSend ? IsFinalOrInterrupted(state) : IsTerminal(state);
  }

  void Start(const a2apb::SendMessageRequest* send,
             const a2apb::SubscribeToTaskRequest* subscribe) {
    std::string tenant;
    absl::Status accepted;
    std::optional<Access> access;
    // The message is durable once accepted (this pool thread waited for it), and its delivery
    // starts when this ends, whatever happens to the stream: after the stream's opening
    // snapshot, so that a sender's stream opens with the task as it accepted the message and
    // carries every change the agent makes, however quick the agent.
    std::optional<A2ATasks::Change> change;
    absl::Cleanup deliver = [this, &change] {
      if (change.has_value()) service_->gateway()->Accepted(*change);
    };
    if (send != nullptr) {
      absl::StatusOr<A2ATasks::Change> made = service_->Accept(context_, *send);
      accepted = made.status();
      if (made.ok()) {
        change = *std::move(made);
        absl::MutexLock lock(&mu_);
        task_id_ = change->header.task().id();
        sent_seq_ = change->sent_seq;
      }
    } else {
      accepted = CheckA2AVersion(context_);
      absl::StatusOr<Caller> caller = CallerOf(context_);
      if (accepted.ok() && !caller.ok()) accepted = caller.status();
      if (accepted.ok()) {
        access = AccessOf(*caller);
        absl::MutexLock lock(&mu_);
        task_id_ = subscribe->id();
        tenant = subscribe->tenant();
      }
    }
    // From here on nothing reads the request or context_. Cancelled meanwhile: it finishes now.
    if (!ReleaseFinish()) return;
    if (!accepted.ok()) return Fail(accepted);
    if (mode_ == Mode::kSubscribe) {
      // Fail fast on an unknown, unseen or ended task, before subscribing.
      if (absl::Status seen = service_->tasks()->CheckAccess(task_id_, *access); !seen.ok()) {
        return Fail(seen);
      }
      absl::StatusOr<a2apb::Task> task = service_->tasks()->GetTask(tenant, task_id_, 0);
      if (!task.ok()) return Fail(task.status());
    }
    std::weak_ptr<TaskStream> weak = Self();
    const bool subscribed = subscription_.Subscribe(task_id_, [weak] {
      if (auto stream = weak.lock()) {
        stream->service_->pool()->Schedule([stream] { stream->Fetch(); });
      }
    });
    if (!subscribed) return;  // gRPC is done with the stream
    absl::StatusOr<std::pair<a2apb::Task, int64_t>> snapshot =
        service_->tasks()->Snapshot(tenant, task_id_);
    std::move(deliver).Invoke();
    if (!snapshot.ok()) return Fail(snapshot.status());
    const a2apb::TaskState state = snapshot->first.status().state();
    if (mode_ == Mode::kSubscribe && IsTerminal(state)) {
      return Fail(a2a_protocol::UnsupportedOperation(absl::StrCat("task ", task_id_, " has ended (",
                                                                  a2apb::TaskState_Name(state),
                                                                  "); read it with GetTask")));
    }
    // The task ended before its delivery of this message began (another sender's message
    // ended it meanwhile) and the snapshot holds a direct Message answer: the stream still
    // opens with the task, then carries that Message, as it would have.
    std::optional<a2apb::Message> answer;
    if (mode_ == Mode::kSend && IsTerminal(state)) {
      absl::StatusOr<a2apb::SendMessageResponse> sent =
          service_->tasks()->SendAnswer(task_id_, sent_seq_, 0);
      if (!sent.ok()) return Fail(sent.status());
      if (sent->has_message()) answer = std::move(*sent->mutable_message());
    }
    {
      absl::MutexLock lock(&mu_);
      cursor_ = snapshot->second;
      a2apb::StreamResponse first;
      *first.mutable_task() = std::move(snapshot->first);
      Push(std::move(first));
      if (answer.has_value()) {
        a2apb::StreamResponse message;
        *message.mutable_message() = *std::move(answer);
        Push(std::move(message));
      }
      ending_ = Ends(state);
      started_ = true;
      if (ending_) Close(grpc::Status::OK);
    }
    Fetch();
  }

  // Reads the events after the cursor from the log and queues them for writing.
  void Fetch() {
    int64_t from;
    {
      absl::MutexLock lock(&mu_);
      if (!started_ || ending_ || closed()) return;
      if (fetching_) {
        refetch_ = true;
        return;
      }
      fetching_ = true;
      from = cursor_;
    }
    absl::StatusOr<std::vector<v1::StoredEvent>> events =
        service_->tasks()->ReadEvents(task_id_, from, kEventBatch);
    absl::MutexLock lock(&mu_);
    fetching_ = false;
    if (!events.ok()) return Fail(events.status());
    for (v1::StoredEvent& event : *events) {
      if (ending_) break;
      const int64_t seq = event.seq();
      const bool ends =
          event.event().has_status_update() && Ends(event.event().status_update().status().state());
      // The sender's stream carries the agent's direct Message answer to its message in place
      // of the status change it made; a subscriber sees the change (the task's own stream).
      a2apb::StreamResponse out = mode_ == Mode::kSend
                                      ? A2ATasks::SendStreamEvent(std::move(event), sent_seq_)
                                      : std::move(*event.mutable_event());
      switch (Push(std::move(out))) {
        case PushResult::kQueued:
          break;
        case PushResult::kOverflowed:
          LOG_WARN("task %s: closing a stream that fell more than %d events behind", task_id_,
                   service_->stream_queue_limit());
          return;
        case PushResult::kClosed:
          return;
      }
      cursor_ = seq;
      ending_ = ends;
    }
    if (ending_) {
      Close(grpc::Status::OK);
      return;
    }
    const bool more = refetch_ || static_cast<int>(events->size()) == kEventBatch;
    refetch_ = false;
    if (more) service_->pool()->Schedule([stream = Self()] { stream->Fetch(); });
  }

  void Fail(const absl::Status& status) { Abort(common::ToGrpcStatus(status)); }

  A2AServiceImpl* service_;
  grpc::CallbackServerContext* context_;
  const Mode mode_;
  const std::unique_ptr<StreamSlots::Slot> slot_;  // released with the stream
  // Ends the stream when the caller's token goes (null without tokens).
  std::unique_ptr<TokenSource::Registration> revocation_;
  absl::Mutex mu_;        // taken before the writer's own lock, never after
  std::string task_id_;   // written only by Start, before it subscribes
  int64_t sent_seq_ = 0;  // kSend: the history seq of the message sent; as task_id_
  TaskSubscription subscription_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;
  bool refetch_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;  // the event that ends the stream is queued
  int64_t cursor_ ABSL_GUARDED_BY(mu_) = 0;
};

// Wraps a unary handler's work with the a2a-version check; `work` gets the caller's Access.
template <typename Response, typename Work>
grpc::ServerUnaryReactor* HandleA2A(grpc::CallbackServerContext* context, CallRunner* calls,
                                    CallKind kind, Response* response, Work work) {
  return HandleUnary(
      context, calls, kind, response,
      [context, work = std::move(work)](const Caller& caller) mutable -> absl::StatusOr<Response> {
        RETURN_IF_ERROR(CheckA2AVersion(context));
        return work(AccessOf(caller));
      });
}

}  // namespace

absl::Status CheckA2AVersion(const grpc::CallbackServerContext* context) {
  return a2a_protocol::CheckVersion(context->client_metadata(), "server");
}

namespace {

// The A2A version a call's push configs are created in: 0.3 when a 0.3 binding of the
// coordinator relayed it (kCallerVersionMetadata), else 1.0.
const char* PushVersionOf(const grpc::ServerContextBase* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kCallerVersionMetadata);
  return it != metadata.end() && it->second == a2a_protocol::v03::kVersion ? kPushVersion03
                                                                           : kPushVersion10;
}

}  // namespace

absl::StatusOr<A2ATasks::Change> A2AServiceImpl::Accept(const grpc::CallbackServerContext* context,
                                                        const a2apb::SendMessageRequest& request) {
  RETURN_IF_ERROR(CheckA2AVersion(context));
  ASSIGN_OR_RETURN(const Caller caller, CallerOf(context));
  if (!request.has_message()) return absl::InvalidArgumentError("message is required");
  RETURN_IF_ERROR(tasks_->ValidateMessage(request.message()));
  // Checked before anything is stored: the answer applies it only once the turn has ended.
  if (request.configuration().has_history_length() &&
      request.configuration().history_length() < 0) {
    return absl::InvalidArgumentError("configuration.history_length must not be negative");
  }
  // The agent, checked before anything is stored. A message that continues a task without a
  // tenant goes to the task's own agent (AcceptMessage), whatever the default.
  std::string tenant;
  if (!request.tenant().empty() || request.message().task_id().empty()) {
    ASSIGN_OR_RETURN(tenant, ResolveTenant(request.tenant()));
  }
  const a2apb::TaskPushNotificationConfig* push = nullptr;
  if (request.configuration().has_task_push_notification_config()) {
    push = &request.configuration().task_push_notification_config();
  }
  return tasks_->AcceptMessage(tenant, request.message(), push, AccessOf(caller),
                               PushVersionOf(context));
}

grpc::ServerUnaryReactor* A2AServiceImpl::SendMessage(grpc::CallbackServerContext* context,
                                                      const a2apb::SendMessageRequest* request,
                                                      a2apb::SendMessageResponse* response) {
  if (absl::StatusOr<Caller> caller = CallerOf(context); !caller.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(common::ToGrpcStatus(caller.status()));
    return reactor;
  }
  return SendCall::Begin(this, context, request, response);
}

grpc::ServerWriteReactor<a2apb::StreamResponse>* A2AServiceImpl::SendStreamingMessage(
    grpc::CallbackServerContext* context, const a2apb::SendMessageRequest* request) {
  if (absl::StatusOr<Caller> caller = CallerOf(context); !caller.ok()) {
    return common::RefuseStream<a2apb::StreamResponse>(common::ToGrpcStatus(caller.status()));
  }
  absl::StatusOr<std::unique_ptr<StreamSlots::Slot>> slot = TakeStreamSlot(stream_slots_);
  if (!slot.ok())
    return common::RefuseStream<a2apb::StreamResponse>(common::ToGrpcStatus(slot.status()));
  return TaskStream::Begin(this, context, request, nullptr, *std::move(slot));
}

grpc::ServerWriteReactor<a2apb::StreamResponse>* A2AServiceImpl::SubscribeToTask(
    grpc::CallbackServerContext* context, const a2apb::SubscribeToTaskRequest* request) {
  if (absl::StatusOr<Caller> caller = CallerOf(context); !caller.ok()) {
    return common::RefuseStream<a2apb::StreamResponse>(common::ToGrpcStatus(caller.status()));
  }
  absl::StatusOr<std::unique_ptr<StreamSlots::Slot>> slot = TakeStreamSlot(stream_slots_);
  if (!slot.ok())
    return common::RefuseStream<a2apb::StreamResponse>(common::ToGrpcStatus(slot.status()));
  return TaskStream::Begin(this, context, nullptr, request, *std::move(slot));
}

grpc::ServerUnaryReactor* A2AServiceImpl::GetTask(grpc::CallbackServerContext* context,
                                                  const a2apb::GetTaskRequest* request,
                                                  a2apb::Task* response) {
  return HandleA2A(context, calls_, CallKind::kPool, response,
                   [this, request](const Access& access) -> absl::StatusOr<a2apb::Task> {
                     RETURN_IF_ERROR(tasks_->CheckAccess(request->id(), access));
                     std::optional<int> history;
                     if (request->has_history_length()) history = request->history_length();
                     return tasks_->GetTask(request->tenant(), request->id(), history);
                   });
}

grpc::ServerUnaryReactor* A2AServiceImpl::ListTasks(grpc::CallbackServerContext* context,
                                                    const a2apb::ListTasksRequest* request,
                                                    a2apb::ListTasksResponse* response) {
  return HandleA2A(
      context, calls_, CallKind::kPool, response,
      [this, request](const Access& access) { return tasks_->ListTasks(*request, access); });
}

grpc::ServerUnaryReactor* A2AServiceImpl::CancelTask(grpc::CallbackServerContext* context,
                                                     const a2apb::CancelTaskRequest* request,
                                                     a2apb::Task* response) {
  // The gateway may call the agent, after what it stored: that blocking call runs here, on the
  // work pool, and each of its writes waits for its sync on this thread.
  return HandleA2A(context, calls_, CallKind::kBlocking, response,
                   [this, request](const Access& access) -> absl::StatusOr<a2apb::Task> {
                     RETURN_IF_ERROR(tasks_->CheckAccess(request->id(), access, /*change=*/true));
                     return gateway_->CancelTask(*request);
                   });
}

grpc::ServerUnaryReactor* A2AServiceImpl::CreateTaskPushNotificationConfig(
    grpc::CallbackServerContext* context, const a2apb::TaskPushNotificationConfig* request,
    a2apb::TaskPushNotificationConfig* response) {
  return HandleA2A(
      context, calls_, CallKind::kPool, response,
      [this, request, version = PushVersionOf(context)](
          const Access& access) -> absl::StatusOr<a2apb::TaskPushNotificationConfig> {
        RETURN_IF_ERROR(tasks_->CheckAccess(request->task_id(), access, /*change=*/true));
        return push_->CreatePushConfig(*request, version);
      });
}

grpc::ServerUnaryReactor* A2AServiceImpl::GetTaskPushNotificationConfig(
    grpc::CallbackServerContext* context,
    const a2apb::GetTaskPushNotificationConfigRequest* request,
    a2apb::TaskPushNotificationConfig* response) {
  return HandleA2A(
      context, calls_, CallKind::kPool, response,
      [this, request](const Access& access) -> absl::StatusOr<a2apb::TaskPushNotificationConfig> {
        RETURN_IF_ERROR(tasks_->CheckAccess(request->task_id(), access));
        return push_->GetPushConfig(request->tenant(), request->task_id(), request->id());
      });
}

grpc::ServerUnaryReactor* A2AServiceImpl::ListTaskPushNotificationConfigs(
    grpc::CallbackServerContext* context,
    const a2apb::ListTaskPushNotificationConfigsRequest* request,
    a2apb::ListTaskPushNotificationConfigsResponse* response) {
  return HandleA2A(context, calls_, CallKind::kPool, response,
                   [this, request](const Access& access)
                       -> absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> {
                     RETURN_IF_ERROR(tasks_->CheckAccess(request->task_id(), access));
                     return push_->ListPushConfigs(*request);
                   });
}

grpc::ServerUnaryReactor* A2AServiceImpl::DeleteTaskPushNotificationConfig(
    grpc::CallbackServerContext* context,
    const a2apb::DeleteTaskPushNotificationConfigRequest* request,
    google::protobuf::Empty* response) {
  return HandleA2A(
      context, calls_, CallKind::kPool, response,
      [this, request](const Access& access) -> absl::StatusOr<google::protobuf::Empty> {
        RETURN_IF_ERROR(tasks_->CheckAccess(request->task_id(), access, /*change=*/true));
        RETURN_IF_ERROR(
            push_->DeletePushConfig(request->tenant(), request->task_id(), request->id()));
        return google::protobuf::Empty();
      });
}

grpc::ServerUnaryReactor* A2AServiceImpl::GetExtendedAgentCard(
    grpc::CallbackServerContext* context, const a2apb::GetExtendedAgentCardRequest* request,
    a2apb::AgentCard* response) {
  // The cards the coordinator publishes declare no extended card (capabilities.extendedAgentCard
  // is false), so the call is UnsupportedOperation, as specification section 3.3.3 requires; an
  // unknown agent is still NOT_FOUND.
  return HandleA2A(context, calls_, CallKind::kPool, response,
                   [this, request](const Access&) -> absl::StatusOr<a2apb::AgentCard> {
                     std::string card_path = "/.well-known/agent-card.json";
                     if (!request->tenant().empty()) {
                       ASSIGN_OR_RETURN(v1::Agent agent, agents_->Get(request->tenant()));
                       card_path = absl::StrCat(AgentBasePath(agent.name()), card_path);
                     }
                     return a2a_protocol::UnsupportedOperation(
                         absl::StrCat("the card declares no extended agent card (capabilities."
                                      "extendedAgentCard is false): read the public card at ",
                                      card_path, " on the HTTP port"));
                   });
}

}  // namespace coordinator
