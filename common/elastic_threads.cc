#include "common/elastic_threads.h"

#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/thread_name.h"

namespace common {

struct ElasticThreads::State {
  State(absl::string_view name, absl::Duration idle_exit) : name(name), idle_exit(idle_exit) {}

  const std::string name;
  const absl::Duration idle_exit;
  absl::Mutex mu;
  // Closures handed over and not yet picked up; never more than the idle threads.
  std::deque<absl::AnyInvocable<void() &&>> handed ABSL_GUARDED_BY(mu);
  int threads ABSL_GUARDED_BY(mu) = 0;
  int idle ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
};

ElasticThreads::ElasticThreads(absl::string_view name, absl::Duration idle_exit)
    : state_(std::make_shared<State>(name, idle_exit)) {}

ElasticThreads::~ElasticThreads() {
  absl::MutexLock lock(&state_->mu);
  state_->stopping = true;  // idle threads end; busy ones end after their closure
}

void ElasticThreads::Run(absl::AnyInvocable<void() &&> fn) {
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->idle > static_cast<int>(state_->handed.size())) {
      state_->handed.push_back(std::move(fn));  // an idle thread takes it
      return;
    }
    ++state_->threads;
  }
  std::thread([state = state_, fn = std::move(fn)]() mutable {
    SetThreadName(state->name);
    Work(std::move(state), std::move(fn));
  }).detach();
}

int ElasticThreads::threads() const {
  absl::MutexLock lock(&state_->mu);
  return state_->threads;
}

int ElasticThreads::idle() const {
  absl::MutexLock lock(&state_->mu);
  return state_->idle;
}

void ElasticThreads::Work(std::shared_ptr<State> state, absl::AnyInvocable<void() &&> fn) {
  while (true) {
    std::move(fn)();
    fn = nullptr;  // what it captured goes now, not when the next closure comes
    absl::MutexLock lock(&state->mu);
    ++state->idle;
    auto ready = [&state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return !state->handed.empty() || state->stopping;
    };
    const bool woken = state->mu.AwaitWithTimeout(absl::Condition(&ready), state->idle_exit);
    --state->idle;
    if (!woken || state->handed.empty()) {
      --state->threads;
      return;
    }
    fn = std::move(state->handed.front());
    state->handed.pop_front();
  }
}

}  // namespace common
