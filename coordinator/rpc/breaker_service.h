// gRPC face of the loop breaker: coordinator.v1.BreakerService. Thin: each handler hands the
// request to the Breaker on the work pool (coordinator/rpc/unary_handler.h) and maps the result.
#ifndef COORDINATOR_RPC_BREAKER_SERVICE_H_
#define COORDINATOR_RPC_BREAKER_SERVICE_H_

#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/retry/breaker.h"
#include "coordinator/v1/breaker.grpc.pb.h"

namespace coordinator {

class BreakerServiceImpl final : public v1::BreakerService::CallbackService {
 public:
  BreakerServiceImpl(Breaker* breaker, CallRunner* calls) : breaker_(breaker), calls_(calls) {}

  grpc::ServerUnaryReactor* CheckLoop(grpc::CallbackServerContext* context,
                                      const v1::CheckLoopRequest* request,
                                      v1::CheckLoopResponse* response) override;
  grpc::ServerUnaryReactor* AnalyzeLoop(grpc::CallbackServerContext* context,
                                        const v1::AnalyzeLoopRequest* request,
                                        v1::LoopAnalysis* response) override;
  grpc::ServerUnaryReactor* ForceEscalate(grpc::CallbackServerContext* context,
                                          const v1::ForceEscalateRequest* request,
                                          v1::ForceEscalateResponse* response) override;
  grpc::ServerUnaryReactor* Break(grpc::CallbackServerContext* context,
                                  const v1::BreakRequest* request,
                                  v1::BreakResponse* response) override;
  grpc::ServerUnaryReactor* GetBreakerStatus(grpc::CallbackServerContext* context,
                                             const v1::GetBreakerStatusRequest* request,
                                             v1::GetBreakerStatusResponse* response) override;
  grpc::ServerUnaryReactor* GetBreakSummary(grpc::CallbackServerContext* context,
                                            const v1::GetBreakSummaryRequest* request,
                                            v1::GetBreakSummaryResponse* response) override;
  grpc::ServerUnaryReactor* Cleanup(grpc::CallbackServerContext* context,
                                    const v1::CleanupBreakerRequest* request,
                                    v1::CleanupBreakerResponse* response) override;
  grpc::ServerUnaryReactor* ReadBreakerLog(grpc::CallbackServerContext* context,
                                           const v1::ReadBreakerLogRequest* request,
                                           v1::ReadBreakerLogResponse* response) override;

 private:
  Breaker* breaker_;   // not owned
  CallRunner* calls_;  // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_BREAKER_SERVICE_H_
