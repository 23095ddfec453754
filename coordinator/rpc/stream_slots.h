// A bound on the server's open streams (A2A SendStreamingMessage and SubscribeToTask, work
// WatchRun), --max_streams: each open stream holds a reactor, a subscription and a queue, so their
// number must not grow with whatever clients choose to open. A stream takes a slot when it
// starts and gives it back when gRPC is done with it; one that finds none is refused with
// RESOURCE_EXHAUSTED before it subscribes to anything.
#ifndef COORDINATOR_RPC_STREAM_SLOTS_H_
#define COORDINATOR_RPC_STREAM_SLOTS_H_

#include <atomic>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace coordinator {

// Default of --max_streams.
inline constexpr int kDefaultMaxStreams = 1000;
// Default of --stream_queue_limit: events one stream may hold unsent before it is closed.
inline constexpr int kDefaultStreamQueueLimit = 1024;

class StreamSlots {
 public:
  explicit StreamSlots(int max_streams) : max_(max_streams) {}

  // One slot, held until the returned object is destroyed; RESOURCE_EXHAUSTED naming
  // --max_streams when every slot is taken.
  class Slot {
   public:
    explicit Slot(StreamSlots* slots) : slots_(slots) {}
    ~Slot() { slots_->open_.fetch_sub(1); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    StreamSlots* slots_;
  };

  // A slot, or RESOURCE_EXHAUSTED naming --max_streams when all are taken.
  absl::StatusOr<std::unique_ptr<Slot>> TryAcquire() {
    if (open_.fetch_add(1) >= max_) {
      open_.fetch_sub(1);
      return absl::ResourceExhaustedError(
          absl::StrCat("the coordinator already serves ", max_,
                       " streams, its limit (--max_streams); close one or retry later"));
    }
    return std::make_unique<Slot>(this);
  }

  int open() const { return open_.load(); }

 private:
  const int max_;
  std::atomic<int> open_{0};
};

// A slot of `slots`, or no slot (and no bound) when `slots` is null.
inline absl::StatusOr<std::unique_ptr<StreamSlots::Slot>> TakeStreamSlot(StreamSlots* slots) {
  if (slots == nullptr) return std::unique_ptr<StreamSlots::Slot>();
  return slots->TryAcquire();
}

}  // namespace coordinator

#endif  // COORDINATOR_RPC_STREAM_SLOTS_H_
