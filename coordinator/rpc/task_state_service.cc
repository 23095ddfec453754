#include "coordinator/rpc/task_state_service.h"

#include "common/status_macros.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* TaskStateServiceImpl::InitTask(grpc::CallbackServerContext* context,
                                                         const v1::InitTaskRequest* request,
                                                         v1::InitTaskResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response, [this, request](const Caller& caller) {
        return tasks_->Init(request->description(), AccessOf(caller),
                            request->has_id_text()
                                ? std::optional<absl::string_view>(request->id_text())
                                : std::nullopt);
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::GetTaskState(grpc::CallbackServerContext* context,
                                                             const v1::GetTaskStateRequest* request,
                                                             v1::TaskState* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return tasks_->GetState(request->task_id(), AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::GetTaskField(grpc::CallbackServerContext* context,
                                                             const v1::GetTaskFieldRequest* request,
                                                             v1::GetTaskFieldResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::GetTaskFieldResponse> {
        v1::GetTaskFieldResponse out;
        ASSIGN_OR_RETURN(*out.mutable_value(),
                         tasks_->GetField(request->task_id(), request->field(), AccessOf(caller)));
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::SetTaskField(grpc::CallbackServerContext* context,
                                                             const v1::SetTaskFieldRequest* request,
                                                             v1::SetTaskFieldResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::SetTaskFieldResponse> {
        v1::SetTaskFieldResponse out;
        ASSIGN_OR_RETURN(*out.mutable_value(),
                         tasks_->SetField(request->task_id(), request->field(), request->value(),
                                          AccessOf(caller)));
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::IncrementAttempt(
    grpc::CallbackServerContext* context, const v1::IncrementAttemptRequest* request,
    v1::IncrementAttemptResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::IncrementAttemptResponse> {
        v1::IncrementAttemptResponse out;
        ASSIGN_OR_RETURN(const int32_t count,
                         tasks_->IncrementAttempt(request->task_id(), AccessOf(caller)));
        out.set_attempt_count(count);
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::GetTier(grpc::CallbackServerContext* context,
                                                        const v1::GetTierRequest* request,
                                                        v1::GetTierResponse* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) {
                       return tasks_->GetTier(request->task_id(), AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::Escalate(grpc::CallbackServerContext* context,
                                                         const v1::EscalateRequest* request,
                                                         v1::EscalateResponse* response) {
  return HandleUnary(context, calls_, CallKind::kShort, response,
                     [this, request](const Caller& caller) {
                       return tasks_->Escalate(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::RecordFailure(
    grpc::CallbackServerContext* context, const v1::RecordFailureRequest* request,
    v1::RecordFailureResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::RecordFailureResponse> {
        v1::RecordFailureResponse out;
        ASSIGN_OR_RETURN(
            *out.mutable_failure(),
            tasks_->RecordFailure(request->task_id(), request->error(), AccessOf(caller)));
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::RecordQualityGate(
    grpc::CallbackServerContext* context, const v1::RecordQualityGateRequest* request,
    v1::RecordQualityGateResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kShort, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::RecordQualityGateResponse> {
        v1::RecordQualityGateResponse out;
        ASSIGN_OR_RETURN(*out.mutable_result(),
                         tasks_->RecordQualityGate(*request, AccessOf(caller)));
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::GetFailureContext(
    grpc::CallbackServerContext* context, const v1::GetFailureContextRequest* request,
    v1::GetFailureContextResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response, [this, request](const Caller& caller) {
        return tasks_->GetFailureContext(request->task_id(), request->tail(), AccessOf(caller));
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::CleanupTask(grpc::CallbackServerContext* context,
                                                            const v1::CleanupTaskRequest* request,
                                                            v1::CleanupTaskResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::CleanupTaskResponse> {
        v1::CleanupTaskResponse out;
        ASSIGN_OR_RETURN(const bool was_blocked,
                         tasks_->Cleanup(request->task_id(), AccessOf(caller)));
        out.set_was_blocked(was_blocked);
        return out;
      });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::ListTasks(grpc::CallbackServerContext* context,
                                                          const v1::ListTasksRequest* request,
                                                          v1::ListTasksResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) { return tasks_->List(*request, AccessOf(caller)); });
}

grpc::ServerUnaryReactor* TaskStateServiceImpl::ImportTask(grpc::CallbackServerContext* context,
                                                           const v1::ImportTaskRequest* request,
                                                           v1::ImportTaskResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) { return tasks_->Import(*request, AccessOf(caller)); });
}

}  // namespace coordinator
