// The one server-streaming reactor every stream builds on (the coordinator's A2A streams and
// WatchRun, the agent runtime's SendStreamingMessage). It owns what each of them used to repeat:
// a queue of messages with exactly one write in flight, an optional bound on that queue, finishing
// exactly once (after the queued messages, or at once on an error or a cancel), a hold that keeps
// the call open while a producer still reads the request, and the reactor's own life, which, as in
// gRPC's callback examples, ends with OnDone(). A stream adds what is its own (a snapshot, a
// notifier subscription, a slot) in a subclass and is created with MakeStream().
#ifndef COMMON_STREAM_WRITER_H_
#define COMMON_STREAM_WRITER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_callback.h"

namespace common {

template <typename Stream, typename... Args>
std::shared_ptr<Stream> MakeStream(Args&&... args);

// Push, Close, Abort, HoldFinish and ReleaseFinish may be called from any thread, also under a
// subclass's own lock: the writer never calls back into the subclass while it holds its lock
// (lock order: a subclass's lock, then the writer's). gRPC never runs OnWriteDone or OnDone inline
// with StartWrite or Finish, which is what makes calling them under the writer's lock safe.
template <typename Response>
class StreamWriter : public grpc::ServerWriteReactor<Response>,
                     public std::enable_shared_from_this<StreamWriter<Response>> {
 public:
  enum class PushResult {
    kQueued,      // the message will be written after the ones pushed before it
    kClosed,      // dropped: the stream was closed, aborted or cancelled before
    kOverflowed,  // dropped: the queue was full, so the stream is aborted with the overflow status
  };

  // `max_queue`: how many counted messages (see Push) may wait unsent, not counting the one being
  // written; 0, the default, is no bound. A Push beyond it drops every queued message and ends the
  // stream with `overflow_status` once the write in flight is done. The bound is what keeps a
  // client that reads slower than the producer from holding ever more memory.
  explicit StreamWriter(size_t max_queue = 0,
                        grpc::Status overflow_status = grpc::Status(
                            grpc::StatusCode::RESOURCE_EXHAUSTED, "the stream fell behind"))
      : max_queue_(max_queue), overflow_status_(std::move(overflow_status)) {}

  // Queues `message` after every message pushed before it; it counts against max_queue.
  PushResult Push(Response message) { return PushMessage(std::move(message), true); }

  // As Push, but the message does not count against max_queue: for a batch the stream must send
  // whole however large it is (a snapshot before the changes that follow it).
  PushResult PushUncounted(Response message) { return PushMessage(std::move(message), false); }

  // Ends the stream with `status` once every queued message is written. Only the first Close or
  // Abort counts, except that an Abort (or a cancel) still overrides a Close until the stream has
  // finished: the queued messages are dropped and the Abort's status is sent.
  void Close(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    final_status_ = std::move(status);
    AdvanceLocked();
  }

  // Ends the stream with `status`, dropping the queued messages: at once, or when the write in
  // flight is done (a reactor finishes after its writes).
  void Abort(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    AbortLocked(std::move(status));
    AdvanceLocked();
  }

  // True once the stream takes no more messages (closed, aborted, cancelled or broken).
  bool closed() const {
    absl::MutexLock lock(&mu_);
    return closing_;
  }

  // While held, the stream does not finish, even when the client cancels: gRPC frees the request
  // and the context after OnDone, which follows Finish, so a producer that still reads them holds
  // the stream first (before the reactor is returned to gRPC) and releases it when it is done.
  // Holds nest.
  void HoldFinish() {
    absl::MutexLock lock(&mu_);
    ++holds_;
  }
  // Returns false when the stream was closed meanwhile (a cancel while held): it finishes now,
  // and the producer should stop.
  bool ReleaseFinish() {
    absl::MutexLock lock(&mu_);
    --holds_;
    AdvanceLocked();
    return !closing_;
  }

 protected:
  // After the client cancelled (the stream is already aborted): stop the work it asked for.
  // Runs on a gRPC thread without the writer's lock.
  virtual void OnCancelled() {}
  // gRPC is done with the call (its request and context are gone): drop subscriptions. Runs
  // without the writer's lock, before the writer lets go of itself; the object lives on while
  // another holder (a queued job) keeps a reference.
  virtual void OnStreamDone() {}

 private:
  template <typename Stream, typename... Args>
  friend std::shared_ptr<Stream> MakeStream(Args&&... args);

  // Only the writer writes and finishes: a subclass that called these would break the one write
  // in flight and the one Finish.
  using grpc::ServerWriteReactor<Response>::Finish;
  using grpc::ServerWriteReactor<Response>::StartWrite;
  using grpc::ServerWriteReactor<Response>::StartWriteLast;
  using grpc::ServerWriteReactor<Response>::StartWriteAndFinish;

  void AdoptSelf(std::shared_ptr<StreamWriter> self) {
    absl::MutexLock lock(&mu_);
    self_ = std::move(self);
  }

  struct Entry {
    Response message;
    bool counted;
  };

  PushResult PushMessage(Response message, bool counted) {
    absl::MutexLock lock(&mu_);
    if (closing_) return PushResult::kClosed;
    if (counted && max_queue_ > 0 && counted_ >= max_queue_) {
      AbortLocked(overflow_status_);
      AdvanceLocked();
      return PushResult::kOverflowed;
    }
    queue_.push_back(Entry{std::move(message), counted});
    if (counted) ++counted_;
    AdvanceLocked();
    return PushResult::kQueued;
  }

  void AbortLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (aborted_ || finished_) return;
    aborted_ = true;
    closing_ = true;
    final_status_ = std::move(status);
    queue_.clear();
    counted_ = 0;
  }

  // Starts the next write, or finishes once nothing is queued, in flight or held.
  //
  // A burst leaves in as few sends as gRPC allows: a message with more queued behind it is
  // written with a buffer hint (gRPC completes it at once and may hold its bytes until the next
  // write without one), and the last message of a stream closed with OK goes out with the status
  // in one batch. An agent's answer of four events then costs two sends instead of five.
  void AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || writing_) return;
    if (!queue_.empty()) {
      current_ = std::move(queue_.front().message);
      if (queue_.front().counted) --counted_;
      queue_.pop_front();
      grpc::WriteOptions options;
      if (!queue_.empty()) {
        options.set_buffer_hint();
      } else if (closing_ && holds_ == 0 && final_status_.ok()) {
        // No OnWriteDone follows; current_ stays untouched until OnDone.
        finished_ = true;
        this->StartWriteAndFinish(&current_, options, std::move(final_status_));
        return;
      }
      writing_ = true;
      this->StartWrite(&current_, options);
      return;
    }
    if (!closing_ || holds_ > 0) return;
    finished_ = true;
    this->Finish(std::move(final_status_));
  }

  void OnWriteDone(bool ok) final {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    // The call is gone (cancelled, past its deadline, the server stopping): no client reads this
    // status, but gRPC needs a Finish before it calls OnDone.
    if (!ok) AbortLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is broken"));
    AdvanceLocked();
  }

  void OnCancel() final {
    Abort(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
    OnCancelled();
  }

  void OnDone() final {
    OnStreamDone();
    std::shared_ptr<StreamWriter> self;
    {
      absl::MutexLock lock(&mu_);
      self.swap(self_);
    }
  }  // `self` may delete this

  const size_t max_queue_;
  const grpc::Status overflow_status_;
  mutable absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  size_t counted_ ABSL_GUARDED_BY(mu_) = 0;  // entries of queue_ that count against max_queue_
  Response current_ ABSL_GUARDED_BY(mu_);    // the message being written; gRPC reads it meanwhile
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;   // Close or Abort: no more messages
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;   // the queue was dropped; the status is final
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called: nothing more reaches gRPC
  int holds_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  // The stream owns itself from MakeStream until OnDone.
  std::shared_ptr<StreamWriter> self_ ABSL_GUARDED_BY(mu_);
};

// Creates a stream (a StreamWriter or a subclass of one) that owns itself until gRPC calls its
// OnDone: hand `.get()` to gRPC as the handler's reactor, and keep the shared_ptr (or a weak_ptr)
// only where something outlives the handler, such as a queued job.
template <typename Stream, typename... Args>
std::shared_ptr<Stream> MakeStream(Args&&... args) {
  auto stream = std::make_shared<Stream>(std::forward<Args>(args)...);
  stream->AdoptSelf(stream);
  return stream;
}

// A callable that ends `stream` with `status` (Abort) if it is still there; it holds the stream
// weakly, so it may outlive it.
template <typename Response>
std::function<void()> Aborter(std::weak_ptr<StreamWriter<Response>> stream, grpc::Status status) {
  return [stream = std::move(stream), status = std::move(status)] {
    if (std::shared_ptr<StreamWriter<Response>> alive = stream.lock()) alive->Abort(status);
  };
}

// A stream that only finishes with `status`: what a streaming handler returns for a call it
// refuses.
template <typename Response>
grpc::ServerWriteReactor<Response>* RefuseStream(grpc::Status status) {
  std::shared_ptr<StreamWriter<Response>> stream = MakeStream<StreamWriter<Response>>();
  stream->Close(std::move(status));
  return stream.get();
}

}  // namespace common

#endif  // COMMON_STREAM_WRITER_H_
