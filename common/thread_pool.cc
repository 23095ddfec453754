#include "common/thread_pool.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"

namespace common {

ThreadPool::ThreadPool(int num_threads, int64_t max_queued, absl::string_view name)
    : max_queued_(max_queued) {
  num_threads = std::max(1, num_threads);
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, name = std::string(name)] {
      SetThreadName(name);
      WorkLoop();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::Schedule(absl::AnyInvocable<void() &&> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
}

absl::Status ThreadPool::TrySchedule(absl::AnyInvocable<void() &&> fn) {
  absl::MutexLock lock(&mu_);
  if (max_queued_ != kUnbounded && static_cast<int64_t>(queue_.size()) >= max_queued_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: ", max_queued_,
                     " calls already wait for a worker (--max_queued_calls); retry later"));
  }
  queue_.push_back(std::move(fn));
  return absl::OkStatus();
}

int64_t ThreadPool::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

bool ThreadPool::HasWorkOrStopping() const { return stopping_ || !queue_.empty(); }

void ThreadPool::WorkLoop() {
  while (true) {
    absl::AnyInvocable<void() &&> fn;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &ThreadPool::HasWorkOrStopping));
      if (queue_.empty()) return;  // stopping_ and nothing left to run
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(fn)();
  }
}

}  // namespace common
