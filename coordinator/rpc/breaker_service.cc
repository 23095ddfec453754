#include "coordinator/rpc/breaker_service.h"

#include "coordinator/rpc/unary_handler.h"

namespace coordinator {

grpc::ServerUnaryReactor* BreakerServiceImpl::CheckLoop(grpc::CallbackServerContext* context,
                                                        const v1::CheckLoopRequest* request,
                                                        v1::CheckLoopResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->Check(*request); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::AnalyzeLoop(grpc::CallbackServerContext* context,
                                                          const v1::AnalyzeLoopRequest* request,
                                                          v1::LoopAnalysis* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->Analyze(*request); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::ForceEscalate(grpc::CallbackServerContext* context,
                                                            const v1::ForceEscalateRequest* request,
                                                            v1::ForceEscalateResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->ForceEscalate(*request); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::Break(grpc::CallbackServerContext* context,
                                                    const v1::BreakRequest* request,
                                                    v1::BreakResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->Break(*request); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::GetBreakerStatus(
    grpc::CallbackServerContext* context, const v1::GetBreakerStatusRequest* /*request*/,
    v1::GetBreakerStatusResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this] { return breaker_->Status(); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::GetBreakSummary(
    grpc::CallbackServerContext* context, const v1::GetBreakSummaryRequest* request,
    v1::GetBreakSummaryResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->GetSummary(request->task_id()); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::Cleanup(grpc::CallbackServerContext* context,
                                                      const v1::CleanupBreakerRequest* request,
                                                      v1::CleanupBreakerResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->Cleanup(request->task_id()); });
}

grpc::ServerUnaryReactor* BreakerServiceImpl::ReadBreakerLog(
    grpc::CallbackServerContext* context, const v1::ReadBreakerLogRequest* request,
    v1::ReadBreakerLogResponse* response) {
  return HandleUnary(context, calls_, CallKind::kPool, response,
                     [this, request] { return breaker_->ReadLog(*request); });
}

}  // namespace coordinator
