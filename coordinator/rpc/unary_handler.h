// The shape of every unary handler: validate and do the work on the blocking-work pool (a
// durable write waits for fsync, which must not happen on a gRPC reactor thread), then finish
// the call with the status mapped in one place.
#ifndef COORDINATOR_RPC_UNARY_HANDLER_H_
#define COORDINATOR_RPC_UNARY_HANDLER_H_

#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "common/grpc_status.h"
#include "common/thread_pool.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "grpcpp/grpcpp.h"

namespace coordinator {

// Runs `work` (returning absl::StatusOr<Response>) on `pool`, stores its value in `response`
// and finishes the call. A call the client already cancelled is finished without the work.
// A call whose caller may not make it (CallerOf: no or a bad token, a role that falls short)
// is finished with that status and never reaches `work`. `work` may take the `const Caller&`
// to apply ownership rules. When the pool's queue is full the call gets RESOURCE_EXHAUSTED at
// once (--max_queued_calls).
template <typename Response, typename Work>
grpc::ServerUnaryReactor* HandleUnary(grpc::CallbackServerContext* context,
                                      common::ThreadPool* pool, Response* response, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Caller> caller = CallerOf(context);
  if (!caller.ok()) {
    reactor->Finish(common::ToGrpcStatus(caller.status()));
    return reactor;
  }
  absl::Status queued = pool->TrySchedule([context, reactor, response, work = std::move(work),
                                           caller = *std::move(caller)]() mutable {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled by the client"));
      return;
    }
    absl::StatusOr<Response> result;
    if constexpr (std::is_invocable_v<Work&, const Caller&>) {
      result = work(caller);
    } else {
      result = work();
    }
    if (result.ok()) *response = *std::move(result);
    reactor->Finish(common::ToGrpcStatus(result.status()));
  });
  if (!queued.ok()) reactor->Finish(common::ToGrpcStatus(queued));
  return reactor;
}

}  // namespace coordinator

#endif  // COORDINATOR_RPC_UNARY_HANDLER_H_
