// The shape of every unary handler: validate and do the work, then finish the call with the
// status mapped in one place, once what the work wrote or read is durable.
//
// The work runs in a DurabilityScope (storage/durability_scope.h): its transactions commit
// without waiting for the WAL sync and its reads return at once, and the call is finished by a
// completion that the store's group commit runs when the sync covering all of it has returned
// (or with the sync's error when it failed). So no thread waits per call, a few threads serve
// any number of concurrent calls, and short work runs on the gRPC thread that received the call
// with no hand-off at all.
#ifndef COORDINATOR_RPC_UNARY_HANDLER_H_
#define COORDINATOR_RPC_UNARY_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/thread_pool.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "grpcpp/grpcpp.h"
#include "storage/durability_scope.h"
#include "storage/store.h"

namespace coordinator {

// Where a unary call's work runs. Every kind is acknowledged only once durable.
enum class CallKind {
  // A point read or a transaction of a few keys, which waits for nothing but key locks held for
  // microseconds: runs on the gRPC thread that received the call. (On the work pool instead
  // while the store's writes may block: a disk error being recovered, a write stall.)
  kShort,
  // Longer work, or work that blocks on something else before it writes (scans, pages, many
  // keys, a checkpoint, fetching an agent's card): runs on the work pool, whose thread is free
  // again as soon as the work is done.
  kPool,
  // Work with effects beyond the store that must follow durability and are not published with
  // DurabilityScope::AfterDurable (a call out to an agent): runs on the work pool and waits
  // there for each sync, one worker per call.
  kBlocking,
};

// What the unary handlers of every service share: the work pool, the store whose durability
// they wait for, and the bound on calls waiting (--max_queued_calls).
class CallRunner {
 public:
  // `max_waiting`: calls that may wait at once, for a worker or for the sync that makes them
  // durable; past it a new call gets RESOURCE_EXHAUSTED (common::ThreadPool::kUnbounded: no
  // bound).
  CallRunner(common::ThreadPool* pool, storage::Store* store, int64_t max_waiting)
      : pool_(pool), store_(store), max_waiting_(max_waiting) {}

  common::ThreadPool* pool() const { return pool_; }
  storage::Store* store() const { return store_; }

  // RESOURCE_EXHAUSTED when `max_waiting` calls already wait. Calls that wait for the disk count
  // too: when syncs slow down, calls are refused at once instead of piling up without bound.
  [[nodiscard]] absl::Status Admit() const {
    if (max_waiting_ == common::ThreadPool::kUnbounded) return absl::OkStatus();
    const int64_t waiting = pool_->queued() + waiting_for_disk_.load(std::memory_order_relaxed);
    if (waiting < max_waiting_) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: ", waiting, " calls already wait for a worker or for the disk ",
                     "(--max_queued_calls=", max_waiting_, "); retry later"));
  }

  // Counts a call from when it registers its durability completion until the completion runs.
  void BeginDiskWait() { waiting_for_disk_.fetch_add(1, std::memory_order_relaxed); }
  void EndDiskWait() { waiting_for_disk_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  common::ThreadPool* const pool_;
  storage::Store* const store_;
  const int64_t max_waiting_;
  std::atomic<int64_t> waiting_for_disk_{0};
};

namespace unary_internal {

template <typename Response, typename Work>
absl::StatusOr<Response> Invoke(Work& work, const Caller& caller) {
  if constexpr (std::is_invocable_v<Work&, const Caller&>) {
    return work(caller);
  } else {
    return work();
  }
}

}  // namespace unary_internal

// Runs `work` (returning absl::StatusOr<Response>) where `kind` says, stores its value in
// `response` and finishes the call once everything the work wrote or read is durable. A call
// the client already cancelled is finished without the work. A call whose caller may not make
// it (CallerOf: no or a bad token, a role that falls short) is finished with that status and
// never reaches `work`. `work` may take the `const Caller&` to apply ownership rules. A call
// over the --max_queued_calls bound gets RESOURCE_EXHAUSTED at once.
//
// When the sync fails, the call fails with the sync's status whatever the work returned: an
// outcome such as ALREADY_EXISTS may rest on a write that was not made durable.
template <typename Response, typename Work>
grpc::ServerUnaryReactor* HandleUnary(grpc::CallbackServerContext* context, CallRunner* runner,
                                      CallKind kind, Response* response, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Caller> caller = CallerOf(context);
  if (!caller.ok()) {
    reactor->Finish(common::ToGrpcStatus(caller.status()));
    return reactor;
  }
  if (absl::Status admitted = runner->Admit(); !admitted.ok()) {
    reactor->Finish(common::ToGrpcStatus(admitted));
    return reactor;
  }
  auto run = [context, reactor, response, runner, kind, work = std::move(work),
              caller = *std::move(caller)]() mutable {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled by the client"));
      return;
    }
    if (kind == CallKind::kBlocking) {
      absl::StatusOr<Response> result = unary_internal::Invoke<Response>(work, caller);
      if (result.ok()) *response = *std::move(result);
      reactor->Finish(common::ToGrpcStatus(result.status()));
      return;
    }
    storage::Store* store = runner->store();
    storage::DurabilityScope scope(store);
    absl::StatusOr<Response> result = unary_internal::Invoke<Response>(work, caller);
    scope.Close();
    // gRPC sends the response only with an OK status, so it may be filled in before the sync.
    if (result.ok()) *response = *std::move(result);
    runner->BeginDiskWait();
    store->WhenDurable(scope.needed(),
                       [runner, reactor, status = result.status(),
                        actions = scope.TakeActions()](absl::Status durable) mutable {
                         runner->EndDiskWait();
                         if (!durable.ok()) {
                           reactor->Finish(common::ToGrpcStatus(durable));
                           return;
                         }
                         for (storage::DurabilityScope::Action& action : actions)
                           std::move(action)();
                         reactor->Finish(common::ToGrpcStatus(status));
                       });
  };
  if (kind == CallKind::kShort && !runner->store()->WritesMayBlock()) {
    run();
    return reactor;
  }
  absl::Status queued = runner->pool()->TrySchedule(std::move(run));
  if (!queued.ok()) reactor->Finish(common::ToGrpcStatus(queued));
  return reactor;
}

}  // namespace coordinator

#endif  // COORDINATOR_RPC_UNARY_HANDLER_H_
