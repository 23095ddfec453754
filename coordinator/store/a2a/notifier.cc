#include "coordinator/store/a2a/notifier.h"

#include <utility>
#include <vector>

namespace coordinator {

uint64_t TaskNotifier::Subscribe(const std::string& task_id, Listener listener) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  listeners_[task_id][id] = std::move(listener);
  return id;
}

void TaskNotifier::Unsubscribe(const std::string& task_id, uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = listeners_.find(task_id);
  if (it == listeners_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) listeners_.erase(it);
}

void TaskNotifier::Notify(const std::string& task_id) {
  // Called outside the lock: a listener may subscribe or unsubscribe.
  std::vector<Listener> to_call;
  {
    absl::MutexLock lock(&mu_);
    auto it = listeners_.find(task_id);
    if (it != listeners_.end()) {
      for (const auto& [id, listener] : it->second) to_call.push_back(listener);
    }
  }
  for (const Listener& listener : to_call) listener();
  absl::MutexLock lock(&observer_mu_);
  if (observer_) observer_(task_id);
}

void TaskNotifier::NotifyAll() {
  std::vector<Listener> to_call;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [task_id, listeners] : listeners_) {
      for (const auto& [id, listener] : listeners) to_call.push_back(listener);
    }
  }
  for (const Listener& listener : to_call) listener();
}

void TaskNotifier::SetObserver(std::function<void(const std::string&)> observer) {
  absl::MutexLock lock(&observer_mu_);
  observer_ = std::move(observer);
}

void TaskNotifier::SetPushListener(Listener listener) {
  absl::MutexLock lock(&push_mu_);
  push_listener_ = std::move(listener);
}

void TaskNotifier::PushesQueued() {
  absl::MutexLock lock(&push_mu_);
  if (push_listener_) push_listener_();
}

}  // namespace coordinator
