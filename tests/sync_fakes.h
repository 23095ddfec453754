// Fakes shared by the tests of durability (storage/group_commit_test.cc,
// storage/durability_scope_test.cc): a log sync the test holds, releases and fails, and a
// recorder of the status a completion was given. Header only.
#ifndef TESTS_SYNC_FAKES_H_
#define TESTS_SYNC_FAKES_H_

#include <deque>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace testing_util {

// A sync the test controls: while held, a sync waits; then it returns the failure set with
// FailAll, else the next queued failure (OK when none is queued). Thread-safe.
class HeldSync {
 public:
  // The sync, to hand to the code under test (GroupCommit::Log::sync,
  // StoreOptions::before_wal_sync). Valid while this object lives.
  std::function<absl::Status()> Hook() {
    return [this] {
      absl::MutexLock lock(&mu_);
      ++started_;
      started_cv_.SignalAll();
      mu_.Await(absl::Condition(
          +[](bool* held) { return !*held; }, &held_));
      if (!failing_.ok()) return failing_;
      if (results_.empty()) return absl::OkStatus();
      absl::Status result = std::move(results_.front());
      results_.pop_front();
      return result;
    };
  }

  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  // The next sync (after those already queued to fail) returns `status`.
  void FailNext(absl::Status status) {
    absl::MutexLock lock(&mu_);
    results_.push_back(std::move(status));
  }
  // Every sync from now on returns `status` (OK: they succeed again), before any queued one.
  void FailAll(absl::Status status) {
    absl::MutexLock lock(&mu_);
    failing_ = std::move(status);
  }
  // Syncs started so far.
  int started() {
    absl::MutexLock lock(&mu_);
    return started_;
  }
  // Waits until `n` syncs have started in all.
  void WaitForStarted(int n) {
    absl::MutexLock lock(&mu_);
    while (started_ < n) started_cv_.Wait(&mu_);
  }

 private:
  absl::Mutex mu_;
  absl::CondVar started_cv_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<absl::Status> results_ ABSL_GUARDED_BY(mu_);
  absl::Status failing_ ABSL_GUARDED_BY(mu_);
};

// What one completion was told, once it ran.
class CompletionRecorder {
 public:
  // The completion: records its status. Valid while this object lives.
  absl::AnyInvocable<void(absl::Status) &&> Callback() {
    return [this](absl::Status s) {
      absl::MutexLock lock(&mu_);
      status_ = std::move(s);
      done_ = true;
    };
  }
  bool done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  // Waits until the completion ran; its status.
  absl::Status Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return status_;
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace testing_util

#endif  // TESTS_SYNC_FAKES_H_
