#include "coordinator/console/console_feed.h"

#include <utility>

namespace coordinator {

void ConsoleFeed::Publish(std::string kind, std::string id) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  // A burst of changes of one record (the items of a new run, created together) is one change
  // to a reader, who reads the record again anyway: when the newest entry names the same record
  // it moves to the new seq instead of a second entry taking a place in the ring. A reader whose
  // cursor is past the old seq still gets the new one.
  if (!ring_.empty() && ring_.back().kind == kind && ring_.back().id == id) ring_.pop_back();
  ring_.push_back(ConsoleChange{++last_seq_, std::move(kind), std::move(id)});
  while (ring_.size() > capacity_) {
    dropped_through_ = ring_.front().seq;
    ring_.pop_front();
  }
}

ConsoleFeed::Batch ConsoleFeed::Wait(int64_t after, absl::Duration timeout,
                                     const std::atomic<bool>* stop) {
  absl::MutexLock lock(&mu_);
  struct Ready {
    ConsoleFeed* feed;
    int64_t after;
    const std::atomic<bool>* stop;
    static bool Check(Ready* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return r->feed->closed_ || r->feed->last_seq_ > r->after ||
             (r->stop != nullptr && r->stop->load());
    }
  } ready{this, after, stop};
  mu_.AwaitWithTimeout(absl::Condition(&Ready::Check, &ready), timeout);
  Batch batch;
  if (closed_) {
    batch.closed = true;
    return batch;
  }
  if (last_seq_ <= after) return batch;
  // Only a change that left the ring is lost to this reader; a seq missing because its entry
  // moved to a later one (Publish) is not.
  if (ring_.empty() || after < dropped_through_) batch.resync = true;
  for (const ConsoleChange& change : ring_) {
    if (change.seq > after) batch.changes.push_back(change);
  }
  return batch;
}

int64_t ConsoleFeed::last_seq() {
  absl::MutexLock lock(&mu_);
  return last_seq_;
}

void ConsoleFeed::Wake() {
  // Releasing the lock makes absl::Mutex evaluate the waiters' conditions again.
  absl::MutexLock lock(&mu_);
}

void ConsoleFeed::Resync() {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  // Every reader's cursor is now behind what the ring holds (nothing), so each gets `resync`.
  dropped_through_ = ++last_seq_;
  ring_.clear();
}

void ConsoleFeed::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

}  // namespace coordinator
