#include "coordinator/rpc/breaker_service.h"

#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* BreakerServiceImpl::CheckLoop(grpc::CallbackServerContext* context,
                                                        const v1::CheckLoopRequest* request,
                                                        v1::CheckLoopResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->Check(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::AnalyzeLoop(grpc::CallbackServerContext* context,
                                                          const v1::AnalyzeLoopRequest* request,
                                                          v1::LoopAnalysis* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->Analyze(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::ForceEscalate(grpc::CallbackServerContext* context,
                                                            const v1::ForceEscalateRequest* request,
                                                            v1::ForceEscalateResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->ForceEscalate(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::Break(grpc::CallbackServerContext* context,
                                                    const v1::BreakRequest* request,
                                                    v1::BreakResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->Break(*request, AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::GetBreakerStatus(
    grpc::CallbackServerContext* context, const v1::GetBreakerStatusRequest* /*request*/,
    v1::GetBreakerStatusResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this](const Caller& caller) { return breaker_->Status(AccessOf(caller)); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::GetBreakSummary(
    grpc::CallbackServerContext* context, const v1::GetBreakSummaryRequest* request,
    v1::GetBreakSummaryResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->GetSummary(request->task_id(), AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::Cleanup(grpc::CallbackServerContext* context,
                                                      const v1::CleanupBreakerRequest* request,
                                                      v1::CleanupBreakerResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->Cleanup(request->task_id(), AccessOf(caller));
                     });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::ReadBreakerLog(
    grpc::CallbackServerContext* context, const v1::ReadBreakerLogRequest* request,
    v1::ReadBreakerLogResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request](const Caller& caller) {
                       return breaker_->ReadLog(*request, AccessOf(caller));
                     });
}

}  // namespace coordinator
