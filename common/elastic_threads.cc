#include "common/elastic_threads.h"

#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
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
  // Every thread in Work, by id, inserted by the thread that started it (under mu, before the
  // new thread can take mu); a thread moves itself to `ended` as it leaves Work.
  absl::flat_hash_map<std::thread::id, std::thread> live ABSL_GUARDED_BY(mu);
  std::vector<std::thread> ended ABSL_GUARDED_BY(mu);
  int idle ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
};

ElasticThreads::ElasticThreads(absl::string_view name, absl::Duration idle_exit,
                               absl::Duration join_grace)
    : join_grace_(join_grace), state_(std::make_shared<State>(name, idle_exit)) {}

ElasticThreads::~ElasticThreads() {
  State& s = *state_;
  std::vector<std::thread> ended;
  {
    absl::MutexLock lock(&s.mu);
    s.stopping = true;  // idle threads leave now; busy ones after their closure
    auto all_left = [&s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) { return s.live.empty(); };
    s.mu.AwaitWithTimeout(absl::Condition(&all_left), join_grace_);
    // A closure still running past the grace keeps its thread, which ends with it.
    for (auto& [id, thread] : s.live) thread.detach();
    s.live.clear();
    ended.swap(s.ended);
  }
  for (std::thread& thread : ended) thread.join();
}

void ElasticThreads::Run(absl::AnyInvocable<void() &&> fn) {
  std::vector<std::thread> ended;
  {
    absl::MutexLock lock(&state_->mu);
    ended.swap(state_->ended);
    if (state_->idle > static_cast<int>(state_->handed.size())) {
      state_->handed.push_back(std::move(fn));  // an idle thread takes it
    } else {
      std::thread thread([state = state_, fn = std::move(fn)]() mutable {
        SetThreadName(state->name);
        Work(state, std::move(fn));
      });
      const std::thread::id id = thread.get_id();
      state_->live.emplace(id, std::move(thread));
    }
  }
  // Threads that ended idle since the last Run: they have left Work, so this is quick.
  for (std::thread& thread : ended) thread.join();
}

int ElasticThreads::threads() const {
  absl::MutexLock lock(&state_->mu);
  return static_cast<int>(state_->live.size());
}

int ElasticThreads::idle() const {
  absl::MutexLock lock(&state_->mu);
  return state_->idle;
}

void ElasticThreads::Work(const std::shared_ptr<State>& state, absl::AnyInvocable<void() &&> fn) {
  State& s = *state;
  while (true) {
    std::move(fn)();
    fn = nullptr;  // what it captured goes now, not when the next closure comes
    absl::MutexLock lock(&s.mu);
    ++s.idle;
    auto ready = [&s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
      return !s.handed.empty() || s.stopping;
    };
    const bool woken = s.mu.AwaitWithTimeout(absl::Condition(&ready), s.idle_exit);
    --s.idle;
    if (!woken || s.handed.empty()) {
      // Leaving: whoever runs next joins this thread (unless the pool detached it, gone busy
      // past its grace).
      auto it = s.live.find(std::this_thread::get_id());
      if (it != s.live.end()) {
        s.ended.push_back(std::move(it->second));
        s.live.erase(it);
      }
      return;
    }
    fn = std::move(s.handed.front());
    s.handed.pop_front();
  }
}

}  // namespace common
