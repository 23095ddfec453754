// gRPC face of WorkStore: coordinator.v1.WorkService. Thin: unary handlers hand the request to
// the store (coordinator/rpc/unary_handler.h); WatchRun is a server-streaming reactor fed by the
// WorkNotifier.
#ifndef COORDINATOR_RPC_WORK_SERVICE_H_
#define COORDINATOR_RPC_WORK_SERVICE_H_

#include <cstddef>

#include "coordinator/rpc/stream_slots.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/work/work_notifier.h"
#include "coordinator/store/work/work_store.h"
#include "coordinator/v1/work.grpc.pb.h"

namespace coordinator {

class WorkServiceImpl final : public v1::WorkService::CallbackService {
 public:
  // How many changes may wait for one slow watcher before its stream is ended with
  // RESOURCE_EXHAUSTED (the snapshot does not count). Default 1024.
  static constexpr size_t kDefaultWatchQueue = 1024;

  WorkServiceImpl(WorkStore* work, WorkNotifier* notifier, CallRunner* calls,
                  size_t max_watch_queue = kDefaultWatchQueue)
      : work_(work), notifier_(notifier), calls_(calls), max_watch_queue_(max_watch_queue) {}

  // WatchRun streams count against `slots` (--max_streams; nullptr, the default: no bound).
  // Set before the server starts.
  void set_stream_slots(StreamSlots* slots) { stream_slots_ = slots; }

  grpc::ServerUnaryReactor* CreateRun(grpc::CallbackServerContext* context,
                                      const v1::CreateRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* ImportTaskGraph(grpc::CallbackServerContext* context,
                                            const v1::ImportTaskGraphRequest* request,
                                            v1::Run* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context,
                                   const v1::GetRunRequest* request, v1::Run* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context,
                                     const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* ListItems(grpc::CallbackServerContext* context,
                                      const v1::ListItemsRequest* request,
                                      v1::ListItemsResponse* response) override;
  grpc::ServerUnaryReactor* GetItem(grpc::CallbackServerContext* context,
                                    const v1::GetItemRequest* request,
                                    v1::WorkItem* response) override;
  grpc::ServerUnaryReactor* Claim(grpc::CallbackServerContext* context,
                                  const v1::ClaimRequest* request,
                                  v1::ClaimResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatResponse* response) override;
  grpc::ServerUnaryReactor* Checkpoint(grpc::CallbackServerContext* context,
                                       const v1::CheckpointRequest* request,
                                       v1::WorkItem* response) override;
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* context,
                                     const v1::CompleteRequest* request,
                                     v1::WorkItem* response) override;
  grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* context,
                                 const v1::FailRequest* request, v1::WorkItem* response) override;
  grpc::ServerUnaryReactor* Retry(grpc::CallbackServerContext* context,
                                  const v1::RetryRequest* request, v1::WorkItem* response) override;
  grpc::ServerWriteReactor<v1::RunEvent>* WatchRun(grpc::CallbackServerContext* context,
                                                   const v1::WatchRunRequest* request) override;
  grpc::ServerUnaryReactor* AddItems(grpc::CallbackServerContext* context,
                                     const v1::AddItemsRequest* request,
                                     v1::AddItemsResponse* response) override;
  grpc::ServerUnaryReactor* MergeLevel(grpc::CallbackServerContext* context,
                                       const v1::MergeLevelRequest* request,
                                       v1::Run* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* StopWorker(grpc::CallbackServerContext* context,
                                       const v1::StopWorkerRequest* request,
                                       v1::RunWorker* response) override;
  grpc::ServerUnaryReactor* ListEvents(grpc::CallbackServerContext* context,
                                       const v1::ListEventsRequest* request,
                                       v1::ListEventsResponse* response) override;
  grpc::ServerUnaryReactor* ImportRun(grpc::CallbackServerContext* context,
                                      const v1::ImportRunRequest* request,
                                      v1::ImportRunResponse* response) override;

 private:
  WorkStore* work_;         // not owned
  WorkNotifier* notifier_;  // not owned
  CallRunner* calls_;       // not owned
  const size_t max_watch_queue_;
  StreamSlots* stream_slots_ = nullptr;  // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_WORK_SERVICE_H_
