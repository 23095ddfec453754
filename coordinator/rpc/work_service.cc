#include "coordinator/rpc/work_service.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "common/stream_writer.h"
#include "common/validation.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {
namespace {

// One WatchRun stream. It subscribes to the notifier first and reads the snapshot on the work
// pool afterwards, so no change falls between the two; a change seen in both is sent once (item
// versions tell). Changes wait in the writer's bounded queue (common/stream_writer.h) while a
// write is in flight, so a slow watcher never blocks the writers that publish: when the queue
// overflows, the stream ends with RESOURCE_EXHAUSTED and the watcher watches again. The snapshot
// does not count against the bound; changes that arrive before it is read wait in `early_`, under
// the same bound.
class WatchReactor final : public common::StreamWriter<v1::RunEvent>, public WorkWatcher {
 public:
  WatchReactor(WorkStore* work, WorkNotifier* notifier, common::ThreadPool* pool,
               std::string run_id, size_t max_queue, std::unique_ptr<StreamSlots::Slot> slot)
      : StreamWriter(max_queue, OverflowStatus(max_queue)),
        work_(work),
        notifier_(notifier),
        pool_(pool),
        run_id_(std::move(run_id)),
        max_queue_(max_queue),
        slot_(std::move(slot)) {}

  // Called before the reactor is returned to gRPC, so OnDone cannot run yet. mu_ is not held
  // while subscribing: the notifier's lock is always taken before mu_, never after.
  void Start() {
    if (absl::Status valid = common::ValidateId("run_id", run_id_); !valid.ok()) {
      Abort(common::ToGrpcStatus(valid));
      return;
    }
    if (!notifier_->Subscribe(run_id_, this)) {
      Abort(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down"));
      return;
    }
    pool_->Schedule([self = std::static_pointer_cast<WatchReactor>(shared_from_this())] {
      self->LoadSnapshot();
    });
  }

  void OnEvent(const v1::RunEvent& event) override {
    absl::MutexLock lock(&mu_);
    if (snapshot_sent_) {
      EnqueueLocked(event);
      return;
    }
    if (closed()) return;
    if (early_.size() >= max_queue_) {
      early_.clear();
      Abort(OverflowStatus(max_queue_));
      return;
    }
    early_.push_back(event);
  }

  void OnClose(const absl::Status& status) override { Abort(common::ToGrpcStatus(status)); }

  // Set once, before the reactor goes to gRPC; dropped in OnStreamDone.
  void EndWhenTokenRevoked(grpc::CallbackServerContext* context) {
    revocation_ =
        OnCallerTokenRevoked(context, common::Aborter(weak_from_this(), TokenRevokedStatus()));
  }

 private:
  static grpc::Status OverflowStatus(size_t max_queue) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("this watcher fell more than ", max_queue,
                                     " changes behind (--stream_queue_limit); watch the run again "
                                     "to get a fresh snapshot"));
  }

  // No OnEvent is running or will run after this; a LoadSnapshot still queued keeps the reactor
  // alive until it has run, and then finds the stream closed.
  void OnStreamDone() override {
    notifier_->Unsubscribe(this);
    revocation_.reset();
  }

  void LoadSnapshot() {
    absl::StatusOr<v1::Run> run = work_->GetRun(run_id_);
    absl::StatusOr<std::vector<v1::WorkItem>> items =
        run.ok() ? work_->AllItems(run_id_) : run.status();
    absl::MutexLock lock(&mu_);
    if (!run.ok() || !items.ok()) {
      early_.clear();
      Abort(common::ToGrpcStatus(run.ok() ? items.status() : run.status()));
      return;
    }
    if (closed()) return;
    for (v1::WorkItem& item : *items) {
      versions_[item.item_id()] = item.version();
      v1::RunEvent event;
      event.set_type(v1::RunEvent::TYPE_SNAPSHOT);
      event.set_run_id(run_id_);
      *event.mutable_item() = std::move(item);
      PushUncounted(std::move(event));
    }
    v1::RunEvent end;
    end.set_type(v1::RunEvent::TYPE_SNAPSHOT_END);
    end.set_run_id(run_id_);
    *end.mutable_run() = *std::move(run);
    PushUncounted(std::move(end));
    snapshot_sent_ = true;
    std::vector<v1::RunEvent> early;
    early.swap(early_);
    for (const v1::RunEvent& event : early) EnqueueLocked(event);
  }

  // Queues a change unless the watcher already has it or a newer state of its item.
  void EnqueueLocked(const v1::RunEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed()) return;
    int64_t& seen = versions_[event.item().item_id()];
    if (event.item().version() <= seen) return;
    seen = event.item().version();
    Push(event);
  }

  WorkStore* const work_;
  WorkNotifier* const notifier_;
  common::ThreadPool* const pool_;
  const std::string run_id_;
  const size_t max_queue_;
  const std::unique_ptr<StreamSlots::Slot> slot_;  // released when the reactor is deleted
  // Ends the stream when the caller's token goes (null without tokens).
  std::unique_ptr<TokenSource::Registration> revocation_;

  absl::Mutex mu_;  // taken after the notifier's lock and before the writer's, never the other way
  std::vector<v1::RunEvent> early_ ABSL_GUARDED_BY(mu_);  // changes before the snapshot
  absl::flat_hash_map<std::string, int64_t> versions_ ABSL_GUARDED_BY(mu_);
  bool snapshot_sent_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerUnaryReactor* WorkServiceImpl::CreateRun(grpc::CallbackServerContext* context,
                                                     const v1::CreateRunRequest* request,
                                                     v1::Run* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return work_->CreateRun(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ImportTaskGraph(
    grpc::CallbackServerContext* context, const v1::ImportTaskGraphRequest* request,
    v1::Run* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return work_->ImportTaskGraph(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ImportRun(grpc::CallbackServerContext* context,
                                                     const v1::ImportRunRequest* request,
                                                     v1::ImportRunResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return work_->ImportRun(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::GetRun(grpc::CallbackServerContext* context,
                                                  const v1::GetRunRequest* request,
                                                  v1::Run* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->GetRun(request->run_id()); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListRuns(grpc::CallbackServerContext* context,
                                                    const v1::ListRunsRequest* request,
                                                    v1::ListRunsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->ListRuns(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListItems(grpc::CallbackServerContext* context,
                                                     const v1::ListItemsRequest* request,
                                                     v1::ListItemsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->ListItems(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::GetItem(grpc::CallbackServerContext* context,
                                                   const v1::GetItemRequest* request,
                                                   v1::WorkItem* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response, [this, request] {
    return work_->GetItem(request->run_id(), request->item_id());
  });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Claim(grpc::CallbackServerContext* context,
                                                 const v1::ClaimRequest* request,
                                                 v1::ClaimResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) { return work_->Claim(*request, AccessOf(caller)); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Heartbeat(grpc::CallbackServerContext* context,
                                                     const v1::HeartbeatRequest* request,
                                                     v1::HeartbeatResponse* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) {
                       return work_->Heartbeat(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Checkpoint(grpc::CallbackServerContext* context,
                                                      const v1::CheckpointRequest* request,
                                                      v1::WorkItem* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) {
                       return work_->Checkpoint(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Complete(grpc::CallbackServerContext* context,
                                                    const v1::CompleteRequest* request,
                                                    v1::WorkItem* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return work_->Complete(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Fail(grpc::CallbackServerContext* context,
                                                const v1::FailRequest* request,
                                                v1::WorkItem* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) { return work_->Fail(*request, AccessOf(caller)); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::Retry(grpc::CallbackServerContext* context,
                                                 const v1::RetryRequest* request,
                                                 v1::WorkItem* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->Retry(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::AddItems(grpc::CallbackServerContext* context,
                                                    const v1::AddItemsRequest* request,
                                                    v1::AddItemsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->AddItems(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::MergeLevel(grpc::CallbackServerContext* context,
                                                      const v1::MergeLevelRequest* request,
                                                      v1::Run* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->MergeLevel(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListWorkers(grpc::CallbackServerContext* context,
                                                       const v1::ListWorkersRequest* request,
                                                       v1::ListWorkersResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->ListWorkers(*request); });
}

grpc::ServerUnaryReactor* WorkServiceImpl::StopWorker(grpc::CallbackServerContext* context,
                                                      const v1::StopWorkerRequest* request,
                                                      v1::RunWorker* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return work_->StopWorker(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* WorkServiceImpl::ListEvents(grpc::CallbackServerContext* context,
                                                      const v1::ListEventsRequest* request,
                                                      v1::ListEventsResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return work_->ListEvents(*request); });
}

grpc::ServerWriteReactor<v1::RunEvent>* WorkServiceImpl::WatchRun(
    grpc::CallbackServerContext* context, const v1::WatchRunRequest* request) {
  if (absl::StatusOr<Caller> caller = CallerOf(context); !caller.ok()) {
    return common::RefuseStream<v1::RunEvent>(common::ToGrpcStatus(caller.status()));
  }
  absl::StatusOr<std::unique_ptr<StreamSlots::Slot>> slot = TakeStreamSlot(stream_slots_);
  if (!slot.ok()) return common::RefuseStream<v1::RunEvent>(common::ToGrpcStatus(slot.status()));
  std::shared_ptr<WatchReactor> reactor = common::MakeStream<WatchReactor>(
      work_, notifier_, calls_->pool(), request->run_id(), max_watch_queue_, *std::move(slot));
  reactor->EndWhenTokenRevoked(context);
  reactor->Start();
  return reactor.get();
}

}  // namespace coordinator
