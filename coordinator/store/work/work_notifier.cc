#include "coordinator/store/work/work_notifier.h"

#include <algorithm>

namespace coordinator {

bool WorkNotifier::Subscribe(absl::string_view run_id, WorkWatcher* watcher) {
  absl::WriterMutexLock lock(&mu_);
  if (closed_) return false;
  watchers_[run_id].push_back(watcher);
  runs_[watcher] = std::string(run_id);
  return true;
}

void WorkNotifier::Unsubscribe(WorkWatcher* watcher) {
  absl::WriterMutexLock lock(&mu_);
  auto run = runs_.find(watcher);
  if (run == runs_.end()) return;
  auto it = watchers_.find(run->second);
  if (it != watchers_.end()) {
    std::vector<WorkWatcher*>& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), watcher), list.end());
    if (list.empty()) watchers_.erase(it);
  }
  runs_.erase(run);
}

void WorkNotifier::Publish(const v1::RunEvent& event) {
  // Publishers share the lock; Unsubscribe waits for them, which is what lets a watcher be
  // deleted right after Unsubscribe returns.
  absl::ReaderMutexLock lock(&mu_);
  auto it = watchers_.find(event.run_id());
  if (it != watchers_.end()) {
    for (WorkWatcher* watcher : it->second) watcher->OnEvent(event);
  }
  if (event.run_id().empty()) return;
  auto all = watchers_.find(kAllRuns);
  if (all == watchers_.end()) return;
  for (WorkWatcher* watcher : all->second) watcher->OnEvent(event);
}

void WorkNotifier::Close(const absl::Status& status) {
  absl::WriterMutexLock lock(&mu_);
  closed_ = true;
  for (auto& [run, list] : watchers_) {
    for (WorkWatcher* watcher : list) watcher->OnClose(status);
  }
  watchers_.clear();
  runs_.clear();
}

void WorkNotifier::EndWatches(const absl::Status& status) {
  absl::WriterMutexLock lock(&mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->first == kAllRuns) {
      ++it;
      continue;
    }
    for (WorkWatcher* watcher : it->second) {
      watcher->OnClose(status);
      runs_.erase(watcher);
    }
    watchers_.erase(it++);
  }
}

}  // namespace coordinator
