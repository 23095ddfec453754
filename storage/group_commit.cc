#include "storage/group_commit.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/synchronization/notification.h"
#include "common/thread_name.h"

namespace storage {
namespace {

// The group commit whose syncer thread this is, if any: a completion must not wait for it.
thread_local const GroupCommit* t_syncer_of = nullptr;

}  // namespace

GroupCommit::GroupCommit(Log log, int threads) : log_(std::move(log)) {
  threads = std::max(1, threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { SyncLoop(); });
}

GroupCommit::~GroupCommit() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void GroupCommit::WhenDurable(uint64_t position, Done done) {
  if (position <= durable()) {
    std::move(done)(absl::OkStatus());
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    // durable_ only grows under mu_, so this second look is final.
    if (position > durable_.load(std::memory_order_relaxed)) {
      waiters_.push_back(Waiter{position, std::move(done)});
      waiting_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  std::move(done)(absl::OkStatus());
}

absl::Status GroupCommit::WaitDurable(uint64_t position) {
  if (position <= durable()) return absl::OkStatus();
  if (t_syncer_of == this) {
    return absl::InternalError(
        "a durability completion waited for durability itself (it would wait for its own "
        "thread)");
  }
  mu_.Lock();
  if (position <= durable_.load(std::memory_order_relaxed)) {
    mu_.Unlock();
    return absl::OkStatus();
  }
  if (!sync_running_) {
    // This thread would only wait: it runs the sync itself, which saves handing the turn to a
    // syncer thread and back when calls are few.
    uint64_t target = 0;
    std::vector<Waiter> covered;
    const absl::Status synced = SyncLocked(&target, &covered);
    mu_.Unlock();
    for (Waiter& w : covered) std::move(w.done)(synced);
    // `position` was written before the sync started, so the sync covered it.
    if (position <= target) return synced;
    mu_.Lock();
  }
  absl::Status result;
  absl::Notification done;
  waiters_.push_back(Waiter{position, [&result, &done](absl::Status s) {
                              result = std::move(s);
                              done.Notify();
                            }});
  waiting_.fetch_add(1, std::memory_order_relaxed);
  mu_.Unlock();
  done.WaitForNotification();
  return result;
}

bool GroupCommit::ReadyToSync() const {
  return (!sync_running_ && !waiters_.empty()) || (stopping_ && waiters_.empty());
}

absl::Status GroupCommit::SyncLocked(uint64_t* target, std::vector<Waiter>* covered) {
  sync_running_ = true;
  // Everything up to `target` was written before the sync starts, so the sync covers it;
  // completions registered while it runs at or below `target` are covered too.
  *target = log_.newest();
  mu_.Unlock();
  const absl::Status synced = log_.sync();
  syncs_.fetch_add(1, std::memory_order_relaxed);
  mu_.Lock();
  sync_running_ = false;
  if (synced.ok() && *target > durable_.load(std::memory_order_relaxed)) {
    durable_.store(*target, std::memory_order_release);
  }
  // A failed sync fails exactly the completions it would have covered; the later ones stay for
  // the next sync.
  const uint64_t covers = *target;
  auto later = std::stable_partition(waiters_.begin(), waiters_.end(),
                                     [covers](const Waiter& w) { return w.position > covers; });
  covered->assign(std::make_move_iterator(later), std::make_move_iterator(waiters_.end()));
  waiters_.erase(later, waiters_.end());
  waiting_.fetch_sub(static_cast<int64_t>(covered->size()), std::memory_order_relaxed);
  return synced;
}

// The threads take turns: whoever finds completions waiting and no sync running syncs, then
// hands the turn on (another thread may start the next sync at once) and runs the completions
// its sync covered, outside the lock.
void GroupCommit::SyncLoop() {
  t_syncer_of = this;
  common::SetThreadName("wal-sync");
  std::vector<Waiter> covered;
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(this, &GroupCommit::ReadyToSync));
    if (waiters_.empty()) break;  // stopping, and nothing left to complete
    uint64_t target = 0;
    const absl::Status synced = SyncLocked(&target, &covered);
    mu_.Unlock();
    for (Waiter& w : covered) std::move(w.done)(synced);
    covered.clear();
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace storage
