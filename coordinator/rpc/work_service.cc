#include "coordinator/rpc/work_service.h"

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "common/validation.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {
namespace {

// One WatchRun stream. It subscribes to the notifier first and reads the snapshot on the work
// pool afterwards, so no change falls between the two; a change seen in both is sent once (item
// versions tell). Changes wait in a bounded queue while a write is in flight, so a slow watcher
// never blocks the writers that publish: when the queue overflows, the stream ends with
// RESOURCE_EXHAUSTED and the watcher watches again. gRPC never runs OnWriteDone or OnDone inline
// with StartWrite or Finish, which is what makes calling them under mu_ safe.
class WatchReactor final : public grpc::ServerWriteReactor<v1::RunEvent>, public WorkWatcher {
 public:
  WatchReactor(WorkStore* work, WorkNotifier* notifier, common::ThreadPool* pool,
               std::string run_id, size_t max_queue)
      : work_(work),
        notifier_(notifier),
        pool_(pool),
        run_id_(std::move(run_id)),
        max_queue_(max_queue) {}

  // Holds `slot` (may be null) until the reactor is deleted. Called before Start.
  void set_slot(std::unique_ptr<StreamSlots::Slot> slot) { slot_ = std::move(slot); }

  // Called before the reactor is returned to gRPC, so OnDone cannot run yet. mu_ is not held
  // while subscribing: the notifier's lock is always taken before mu_, never after.
  void Start() {
    if (absl::Status valid = common::ValidateId("run_id", run_id_); !valid.ok()) {
      absl::MutexLock lock(&mu_);
      FinishLocked(common::ToGrpcStatus(valid));
      return;
    }
    if (!notifier_->Subscribe(run_id_, this)) {
      absl::MutexLock lock(&mu_);
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down"));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      snapshot_pending_ = true;
    }
    pool_->Schedule([this] { LoadSnapshot(); });
  }

  void OnEvent(const v1::RunEvent& event) override {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (!snapshot_sent_) {
      if (early_.size() >= max_queue_) {
        OverflowLocked();
      } else {
        early_.push_back(event);
      }
      return;
    }
    EnqueueLocked(event);
    MaybeWriteLocked();
  }

  void OnClose(const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    FinishLocked(common::ToGrpcStatus(status));
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finish_after_write_) {
      finish_after_write_ = false;
      Finish(std::move(pending_finish_));
      return;
    }
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is broken"));
      return;
    }
    MaybeWriteLocked();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
  }

  void OnDone() override {
    notifier_->Unsubscribe(this);  // no OnEvent is running or will run after this
    bool delete_now;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      delete_now = !snapshot_pending_;
    }
    if (delete_now) delete this;
  }

 private:
  void LoadSnapshot() {
    absl::StatusOr<v1::Run> run = work_->GetRun(run_id_);
    absl::StatusOr<std::vector<v1::WorkItem>> items =
        run.ok() ? work_->AllItems(run_id_) : run.status();
    bool delete_now;
    {
      absl::MutexLock lock(&mu_);
      snapshot_pending_ = false;
      if (!run.ok() || !items.ok()) {
        FinishLocked(common::ToGrpcStatus(run.ok() ? items.status() : run.status()));
      } else if (!finished_) {
        for (v1::WorkItem& item : *items) {
          versions_[item.item_id()] = item.version();
          v1::RunEvent& event = queue_.emplace_back();
          event.set_type(v1::RunEvent::TYPE_SNAPSHOT);
          event.set_run_id(run_id_);
          *event.mutable_item() = std::move(item);
        }
        v1::RunEvent& end = queue_.emplace_back();
        end.set_type(v1::RunEvent::TYPE_SNAPSHOT_END);
        end.set_run_id(run_id_);
        *end.mutable_run() = *std::move(run);
        snapshot_sent_ = true;
        std::vector<v1::RunEvent> early;
        early.swap(early_);
        for (const v1::RunEvent& event : early) EnqueueLocked(event);
        MaybeWriteLocked();
      }
      delete_now = done_;
    }
    if (delete_now) delete this;
  }

  // Queues a change unless the watcher already has it or a newer state of its item.
  void EnqueueLocked(const v1::RunEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    int64_t& seen = versions_[event.item().item_id()];
    if (event.item().version() <= seen) return;
    seen = event.item().version();
    if (live_queued_ >= max_queue_) {
      OverflowLocked();
      return;
    }
    queue_.push_back(event);
    ++live_queued_;
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_ || queue_.empty()) return;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    if (current_.type() == v1::RunEvent::TYPE_CHANGED) --live_queued_;
    writing_ = true;
    StartWrite(&current_);
  }

  void OverflowLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    FinishLocked(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this watcher fell more than ", max_queue_,
                     " changes behind (--stream_queue_limit); watch the run again to get a "
                     "fresh snapshot")));
  }

  // Finishes once; after the write in flight, if any (a reactor finishes after its writes).
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    queue_.clear();
    early_.clear();
    if (writing_) {
      finish_after_write_ = true;
      pending_finish_ = std::move(status);
      return;
    }
    Finish(std::move(status));
  }

  WorkStore* const work_;
  WorkNotifier* const notifier_;
  common::ThreadPool* const pool_;
  const std::string run_id_;
  const size_t max_queue_;
  std::unique_ptr<StreamSlots::Slot> slot_;  // released when the reactor is deleted

  absl::Mutex mu_;
  std::deque<v1::RunEvent> queue_ ABSL_GUARDED_BY(mu_);
  size_t live_queued_ ABSL_GUARDED_BY(mu_) = 0;           // TYPE_CHANGED events in queue_
  std::vector<v1::RunEvent> early_ ABSL_GUARDED_BY(mu_);  // changes before the snapshot
  absl::flat_hash_map<std::string, int64_t> versions_ ABSL_GUARDED_BY(mu_);
  v1::RunEvent current_ ABSL_GUARDED_BY(mu_);  // the event being written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool snapshot_pending_ ABSL_GUARDED_BY(mu_) = false;  // LoadSnapshot is queued or running
  bool snapshot_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_after_write_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status pending_finish_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerUnaryReactor* WorkServiceImpl::CreateRun(grpc::CallbackServerContext* context,
                                                     const v1::CreateRunRequest* request,
                                                     v1::Run* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->CreateRun(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ImportTaskGraph(
    grpc::CallbackServerContext* context, const v1::ImportTaskGraphRequest* request,
    v1::Run* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->ImportTaskGraph(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::GetRun(grpc::CallbackServerContext* context,
                                                  const v1::GetRunRequest* request,
                                                  v1::Run* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->GetRun(request->run_id()); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListRuns(grpc::CallbackServerContext* context,
                                                    const v1::ListRunsRequest* request,
                                                    v1::ListRunsResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->ListRuns(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListItems(grpc::CallbackServerContext* context,
                                                     const v1::ListItemsRequest* request,
                                                     v1::ListItemsResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->ListItems(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::GetItem(grpc::CallbackServerContext* context,
                                                   const v1::GetItemRequest* request,
                                                   v1::WorkItem* response) {
  return HandleUnary(context, pool_, response, [this, request] {
    return work_->GetItem(request->run_id(), request->item_id());
  });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Claim(grpc::CallbackServerContext* context,
                                                 const v1::ClaimRequest* request,
                                                 v1::ClaimResponse* response) {
  return HandleUnary(context, pool_, response, [this, request] { return work_->Claim(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Heartbeat(grpc::CallbackServerContext* context,
                                                     const v1::HeartbeatRequest* request,
                                                     v1::HeartbeatResponse* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->Heartbeat(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Checkpoint(grpc::CallbackServerContext* context,
                                                      const v1::CheckpointRequest* request,
                                                      v1::WorkItem* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->Checkpoint(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Complete(grpc::CallbackServerContext* context,
                                                    const v1::CompleteRequest* request,
                                                    v1::WorkItem* response) {
  return HandleUnary(context, pool_, response,
                     [this, request] { return work_->Complete(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Fail(grpc::CallbackServerContext* context,
                                                const v1::FailRequest* request,
                                                v1::WorkItem* response) {
  return HandleUnary(context, pool_, response, [this, request] { return work_->Fail(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Retry(grpc::CallbackServerContext* context,
                                                 const v1::RetryRequest* request,
                                                 v1::WorkItem* response) {
  return HandleUnary(context, pool_, response, [this, request] { return work_->Retry(*request); });
}

grpc::ServerWriteReactor<v1::RunEvent>* WorkServiceImpl::WatchRun(
    grpc::CallbackServerContext* context, const v1::WatchRunRequest* request) {
  if (absl::StatusOr<Caller> caller = CallerOf(context); !caller.ok()) {
    return RejectStream<v1::RunEvent>(common::ToGrpcStatus(caller.status()));
  }
  absl::StatusOr<std::unique_ptr<StreamSlots::Slot>> slot = TakeStreamSlot(stream_slots_);
  if (!slot.ok()) return RejectStream<v1::RunEvent>(common::ToGrpcStatus(slot.status()));
  auto* reactor = new WatchReactor(work_, notifier_, pool_, request->run_id(), max_watch_queue_);
  reactor->set_slot(*std::move(slot));
  reactor->Start();
  return reactor;
}

}  // namespace coordinator
