// A call of the coordinator's own gRPC services made from a descriptor (the HTTP bindings
// transcode JSON onto them): the request and response messages are built from the method's
// types, and a server-streaming call is read one response at a time by the thread that serves
// the HTTP request (StreamCall).
#ifndef A2A_HTTP_GENERIC_STREAM_CALL_H_
#define A2A_HTTP_GENERIC_STREAM_CALL_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/client_callback.h"

namespace a2a_http {

using GenericStub =
    grpc::TemplatedGenericStub<google::protobuf::Message, google::protobuf::Message>;

// An empty message of generated type `type`.
std::unique_ptr<google::protobuf::Message> NewMessage(const google::protobuf::Descriptor* type);
// "/<service full name>/<method>".
std::string MethodPath(const google::protobuf::MethodDescriptor* method);

// One streaming call to the gRPC service, read one response at a time by the HTTP thread that
// serves it. The next read starts when the reader takes a response, outside any of gRPC's
// reactions, so the call carries a hold (gRPC's AddHold) for as long as the reader may still
// start one: without it, the status could end the call (OnDone) in the gap between a read and
// the next, and the next read would land on a call gRPC has already freed. The hold goes when
// no read can follow: the reads ended (a read that failed), or the reader gave up (Abandon).
// The reader's calls (Start, Wait, Abandon) come from one thread at a time.
class StreamCall
    : public grpc::ClientBidiReactor<google::protobuf::Message, google::protobuf::Message> {
 public:
  StreamCall(const google::protobuf::MethodDescriptor* method,
             std::unique_ptr<google::protobuf::Message> request)
      : method_(method), request_(std::move(request)) {}

  grpc::ClientContext* context() { return &context_; }

  // `self` is this call: the call keeps itself alive until OnDone has returned, so whoever
  // drops the last other reference never deletes it while gRPC is still in OnDone.
  void Start(GenericStub* stub, std::shared_ptr<StreamCall> self) {
    self_ = std::move(self);
    stub->PrepareBidiStreamingCall(&context_, MethodPath(method_), grpc::StubOptions(), this);
    AddHold();
    StartWriteLast(request_.get(), grpc::WriteOptions());
    ReadNext();
    StartCall();
  }

  enum class Next { kResponse, kIdle, kEnd };

  // The next response (kResponse, in `*response`), nothing within `wait` (kIdle), or the end of
  // the stream (kEnd: status() is final).
  Next Wait(absl::Duration wait, std::unique_ptr<google::protobuf::Message>* response) {
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return read_ != nullptr || done_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
      if (read_ == nullptr) return done_ ? Next::kEnd : Next::kIdle;
      *response = std::move(read_);
    }
    ReadNext();  // the hold is still there: only a failed read or Abandon removes it
    return Next::kResponse;
  }

  grpc::Status status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }

  // The reader is done with the call (its client went away, or the stream was written whole):
  // cancels it and waits until gRPC is done with it.
  void Abandon() {
    context_.TryCancel();
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      abandoned_ = true;
      // With a read in flight, its completion lets the hold go (OnReadDone); without one, no
      // completion will come, so it goes here.
      release = !reading_ && !hold_released_;
      hold_released_ = hold_released_ || release;
    }
    if (release) RemoveHold();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
  }

  void OnReadDone(bool ok) override {
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      if (ok) read_ = std::move(buffer_);
      // A failed read is the end of the reads; after Abandon nobody starts another.
      release = (!ok || abandoned_) && !hold_released_;
      hold_released_ = hold_released_ || release;
    }
    if (release) RemoveHold();
  }
  void OnDone(const grpc::Status& status) override {
    // Released when OnDone returns (declared before the lock, so it outlives the unlock).
    const std::shared_ptr<StreamCall> keep = std::move(self_);
    absl::MutexLock lock(&mu_);
    status_ = status;
    done_ = true;
  }

 private:
  // Starts the next read into a fresh buffer (the hold is held: Start, or Wait after a read that
  // succeeded, when nothing can have let it go).
  void ReadNext() {
    google::protobuf::Message* buffer;
    {
      absl::MutexLock lock(&mu_);
      buffer_ = NewMessage(method_->output_type());
      buffer = buffer_.get();
      reading_ = true;
    }
    StartRead(buffer);
  }

  const google::protobuf::MethodDescriptor* const method_;
  grpc::ClientContext context_;
  const std::unique_ptr<google::protobuf::Message> request_;
  std::shared_ptr<StreamCall> self_;  // from Start to OnDone
  absl::Mutex mu_;
  std::unique_ptr<google::protobuf::Message> buffer_
      ABSL_GUARDED_BY(mu_);                                               // the outstanding read's
  std::unique_ptr<google::protobuf::Message> read_ ABSL_GUARDED_BY(mu_);  // read, not yet taken
  bool reading_ ABSL_GUARDED_BY(mu_) = false;                             // a read is in flight
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace a2a_http

#endif  // A2A_HTTP_GENERIC_STREAM_CALL_H_
