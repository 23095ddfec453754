// gRPC face of TaskStateStore: coordinator.v1.TaskStateService. Thin: each handler hands the
// request to the store (coordinator/rpc/unary_handler.h) and maps the result.
#ifndef COORDINATOR_RPC_TASK_STATE_SERVICE_H_
#define COORDINATOR_RPC_TASK_STATE_SERVICE_H_

#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/v1/task_state.grpc.pb.h"

namespace coordinator {

class TaskStateServiceImpl final : public v1::TaskStateService::CallbackService {
 public:
  TaskStateServiceImpl(TaskStateStore* tasks, CallRunner* calls) : tasks_(tasks), calls_(calls) {}

  grpc::ServerUnaryReactor* InitTask(grpc::CallbackServerContext* context,
                                     const v1::InitTaskRequest* request,
                                     v1::InitTaskResponse* response) override;
  grpc::ServerUnaryReactor* GetTaskState(grpc::CallbackServerContext* context,
                                         const v1::GetTaskStateRequest* request,
                                         v1::TaskState* response) override;
  grpc::ServerUnaryReactor* GetTaskField(grpc::CallbackServerContext* context,
                                         const v1::GetTaskFieldRequest* request,
                                         v1::GetTaskFieldResponse* response) override;
  grpc::ServerUnaryReactor* SetTaskField(grpc::CallbackServerContext* context,
                                         const v1::SetTaskFieldRequest* request,
                                         v1::SetTaskFieldResponse* response) override;
  grpc::ServerUnaryReactor* IncrementAttempt(grpc::CallbackServerContext* context,
                                             const v1::IncrementAttemptRequest* request,
                                             v1::IncrementAttemptResponse* response) override;
  grpc::ServerUnaryReactor* GetTier(grpc::CallbackServerContext* context,
                                    const v1::GetTierRequest* request,
                                    v1::GetTierResponse* response) override;
  grpc::ServerUnaryReactor* Escalate(grpc::CallbackServerContext* context,
                                     const v1::EscalateRequest* request,
                                     v1::EscalateResponse* response) override;
  grpc::ServerUnaryReactor* RecordFailure(grpc::CallbackServerContext* context,
                                          const v1::RecordFailureRequest* request,
                                          v1::RecordFailureResponse* response) override;
  grpc::ServerUnaryReactor* RecordQualityGate(grpc::CallbackServerContext* context,
                                              const v1::RecordQualityGateRequest* request,
                                              v1::RecordQualityGateResponse* response) override;
  grpc::ServerUnaryReactor* GetFailureContext(grpc::CallbackServerContext* context,
                                              const v1::GetFailureContextRequest* request,
                                              v1::GetFailureContextResponse* response) override;
  grpc::ServerUnaryReactor* CleanupTask(grpc::CallbackServerContext* context,
                                        const v1::CleanupTaskRequest* request,
                                        v1::CleanupTaskResponse* response) override;
  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const v1::ListTasksRequest* request,
                                      v1::ListTasksResponse* response) override;
  grpc::ServerUnaryReactor* ImportTask(grpc::CallbackServerContext* context,
                                       const v1::ImportTaskRequest* request,
                                       v1::ImportTaskResponse* response) override;

 private:
  TaskStateStore* tasks_;  // not owned
  CallRunner* calls_;      // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_TASK_STATE_SERVICE_H_
