// coordctl run work: a worker loop around a command. It claims an item, runs the command with
// the item's COORD_* variables while it heartbeats the lease, and completes or fails the item by
// the command's exit status.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/child_process.h"
#include "common/grpc_retry.h"
#include "common/grpc_status.h"
#include "coordctl/cli.h"
#include "coordctl/run_format.h"
#include "coordinator/v1/work.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkItem;
using coordinator::v1::WorkService;

// A worker's call (Claim; Complete and Fail of its lease), retried until `deadline`
// (common/grpc_retry.h): ABORTED too, which for these can only be a race lost to another worker,
// the reaper or a heartbeat.
absl::Status RetryUntil(const Env& env, absl::Time deadline,
                        const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  common::RetryOptions retry;
  retry.call_timeout = env.timeout;
  retry.retry_for = std::max(deadline - absl::Now(), absl::ZeroDuration());
  retry.retry_aborted = true;
  return common::CallWithRetry(call, retry);
}

// Marks the worker stopped in the run's registry as `run work` ends; a failure only warns.
void StopWorkerQuietly(const Env& env, WorkService::Stub* stub, const std::string& run_id,
                       const std::string& worker, const std::string& reason) {
  coordinator::v1::StopWorkerRequest request;
  request.set_run_id(run_id);
  request.set_worker_id(worker);
  request.set_reason(reason);
  coordinator::v1::RunWorker stopped;
  grpc::Status s = stub->StopWorker(env.NewContext().get(), request, &stopped);
  if (!s.ok()) {
    *env.err << "coordctl: could not mark " << worker << " stopped: " << s.error_message()
             << std::endl;
  }
}

// The options of `run work`.
struct WorkOptions {
  std::string run_id;
  std::string worker;
  absl::Duration ttl;
  absl::Duration poll;
  int64_t max_items = -1;  // -1: no limit
  // How long the coordinator may be unreachable before the worker gives up.
  absl::Duration patience;
};

// INVALID_ARGUMENT (a usage error) for a missing or bad option.
absl::StatusOr<WorkOptions> ReadWorkOptions(const ParsedArgs& args) {
  if (!args.has("worker")) return absl::InvalidArgumentError("--worker is required");
  if (args.rest.empty()) return absl::InvalidArgumentError("the command goes after \"--\"");
  WorkOptions o;
  o.run_id = args.positional[0];
  o.worker = args.get("worker");
  absl::StatusOr<absl::Duration> ttl = TtlArg(args, "30s");
  if (!ttl.ok() || *ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--ttl takes a positive duration");
  }
  o.ttl = *ttl;
  absl::StatusOr<absl::Duration> poll = ParseDurationArg("poll", args.get("poll", "1s"));
  if (!poll.ok() || *poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--poll takes a positive duration");
  }
  o.poll = *poll;
  if (args.has("max-items")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--max-items", args.get("max-items"));
    if (!n.ok() || *n <= 0)
      return absl::InvalidArgumentError("--max-items takes a positive number");
    o.max_items = *n;
  }
  absl::StatusOr<absl::Duration> patience =
      ParseDurationArg("patience", args.get("patience", "5m"));
  if (!patience.ok()) return patience.status();
  o.patience = *patience;
  return o;
}

// How the command of one claimed item ended.
struct Outcome {
  int wait_status = 0;
  bool lost = false;  // the lease was lost: the command was killed
  absl::Time expire;  // when the lease expires
};

// Waits for the command, heartbeating every third of the lease; a refused heartbeat means the
// lease is gone (another worker may hold the item), so the command is stopped.
Outcome Supervise(const Env& env, WorkService::Stub* stub, const WorkOptions& o,
                  const std::string& item_id, const std::string& lease, pid_t child) {
  Outcome out;
  out.expire = absl::Now() + o.ttl;
  // The first heartbeat, at once, records the command's pid as the item's.
  absl::Time next_beat = absl::Now();
  bool pid_sent = false;
  while (true) {
    if (waitpid(child, &out.wait_status, WNOHANG) == child) return out;
    const absl::Time now = absl::Now();
    if (now >= next_beat) {
      coordinator::v1::HeartbeatRequest beat;
      beat.set_lease(lease);
      if (!pid_sent) beat.set_pid(child);
      coordinator::v1::HeartbeatResponse beat_response;
      grpc::Status hs = stub->Heartbeat(env.NewContext().get(), beat, &beat_response);
      if (hs.ok()) {
        pid_sent = true;
        out.expire = absl::Now() + o.ttl;
        next_beat = absl::Now() + o.ttl / 3;
      } else if ((common::IsTransient(hs.error_code()) ||
                  hs.error_code() == grpc::StatusCode::ABORTED) &&
                 now < out.expire) {
        next_beat = now + absl::Milliseconds(200);
      } else {
        *env.err << "coordctl: lost the lease on " << item_id << ": " << hs.error_message()
                 << std::endl;
        kill(child, SIGKILL);
        waitpid(child, &out.wait_status, 0);
        out.lost = true;
        return out;
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

// Completes the item when its command exited 0, else fails it (retryable).
void Report(const Env& env, WorkService::Stub* stub, const WorkOptions& o,
            const coordinator::v1::ClaimResponse& claimed, const Outcome& outcome) {
  const WorkItem& item = claimed.item();
  const int status = outcome.wait_status;
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  WorkItem result;
  absl::Status s;
  if (ok) {
    coordinator::v1::CompleteRequest complete;
    complete.set_lease(claimed.lease());
    complete.set_summary(absl::StrCat("command exited 0 on worker ", o.worker));
    s = RetryUntil(env, outcome.expire,
                   [&](grpc::ClientContext* c) { return stub->Complete(c, complete, &result); });
  } else {
    coordinator::v1::FailRequest fail;
    fail.set_lease(claimed.lease());
    fail.set_error(WIFEXITED(status)
                       ? absl::StrCat("command exited with status ", WEXITSTATUS(status))
                       : absl::StrCat("command killed by signal ", WTERMSIG(status)));
    fail.set_retryable(true);
    s = RetryUntil(env, outcome.expire,
                   [&](grpc::ClientContext* c) { return stub->Fail(c, fail, &result); });
  }
  if (s.ok()) {
    *env.err << "coordctl: " << o.worker << " " << (ok ? "completed " : "failed ") << item.item_id()
             << " epoch " << claimed.epoch() << " -> " << ItemStatusName(result.status())
             << std::endl;
  } else {
    *env.err << "coordctl: result of " << item.item_id() << " not recorded: " << s.message()
             << std::endl;
  }
}

// Runs the command for one claimed item and reports how it ended.
absl::Status WorkOn(const Env& env, WorkService::Stub* stub, const WorkOptions& o,
                    const std::vector<std::string>& command,
                    const coordinator::v1::ClaimResponse& claimed) {
  const WorkItem& item = claimed.item();
  *env.err << "coordctl: " << o.worker << " claimed " << item.item_id() << " epoch "
           << claimed.epoch() << " lease " << claimed.lease() << std::endl;
  common::SpawnOptions spawn;
  spawn.argv = command;
  spawn.stdin_fd = spawn.stdout_fd = spawn.stderr_fd = common::kInherit;
  // In the worker's process group (a terminal's Ctrl-C reaches both), and killed when the worker
  // dies, so that a worker killed with kill -9 leaves no command running without a lease.
  spawn.own_process_group = false;
  spawn.die_with_parent = true;
  spawn.env_add = {absl::StrCat("COORD_RUN_ID=", o.run_id),
                   absl::StrCat("COORD_ITEM_ID=", item.item_id()),
                   absl::StrCat("COORD_LEASE=", claimed.lease()),
                   absl::StrCat("COORD_EPOCH=", claimed.epoch()),
                   absl::StrCat("COORD_ATTEMPT=", item.attempts()),
                   absl::StrCat("COORD_BRANCH=", item.branch()),
                   absl::StrCat("COORD_WORKTREE=", item.worktree()),
                   absl::StrCat("COORD_CHECKPOINT=", item.checkpoint()),
                   absl::StrCat("COORD_PROGRESS=", item.progress())};
  absl::StatusOr<pid_t> child = common::Spawn(spawn);
  if (!child.ok()) {
    // As a shell has it: a command that cannot be run fails its item with exit code 127.
    *env.err << "coordctl: " << child.status().message() << std::endl;
    Outcome failed;
    failed.wait_status = W_EXITCODE(127, 0);
    Report(env, stub, o, claimed, failed);
    return absl::OkStatus();
  }
  const Outcome outcome = Supervise(env, stub, o, item.item_id(), claimed.lease(), *child);
  if (!outcome.lost) Report(env, stub, o, claimed, outcome);
  return absl::OkStatus();
}

int RunWork(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<WorkOptions> o = ReadWorkOptions(args);
  if (!o.ok()) return Fail(env, std::string(o.status().message()), kExitUsage);
  auto stub = WorkService::NewStub(env.channel);
  int64_t processed = 0;
  while (o->max_items < 0 || processed < o->max_items) {
    coordinator::v1::ClaimRequest claim;
    claim.set_run_id(o->run_id);
    claim.set_worker_id(o->worker);
    *claim.mutable_lease_ttl() = ToProto(o->ttl);
    AddCapabilities(args, claim.mutable_capabilities());
    claim.set_pid(getpid());
    coordinator::v1::ClaimResponse claimed;
    const absl::Status s = RetryUntil(env, absl::Now() + o->patience, [&](grpc::ClientContext* c) {
      return stub->Claim(c, claim, &claimed);
    });
    if (!s.ok()) return ReportRpcError(env, common::ToGrpcStatus(s));
    if (!claimed.has_item()) {
      if (claimed.stalled()) {
        *env.err << "coordctl: run " << o->run_id << " is " << RunStatusName(claimed.run().status())
                 << "; nothing left to claim" << std::endl;
        StopWorkerQuietly(env, stub.get(), o->run_id, o->worker,
                          "the run has nothing left to claim");
        return claimed.run().status() == coordinator::v1::RUN_STATUS_COMPLETED ? kExitOk : kExitNo;
      }
      absl::Duration wait = o->poll;
      if (claimed.has_retry_after()) wait = std::min(wait, FromProto(claimed.retry_after()));
      absl::SleepFor(std::max(wait, absl::Milliseconds(10)));
      continue;
    }
    if (absl::Status started = WorkOn(env, stub.get(), *o, args.rest, claimed); !started.ok()) {
      return Fail(env, std::string(started.message()));
    }
    ++processed;
  }
  StopWorkerQuietly(env, stub.get(), o->run_id, o->worker,
                    absl::StrCat("processed --max-items ", o->max_items));
  return kExitOk;
}

}  // namespace

void AddRunWorkCommand(std::vector<Command>* commands) {
  commands->push_back(
      {{"run", "work"},
       "<run> --worker W [--ttl 30s] [--poll 1s] [--max-items N] [--patience 5m] "
       "[--capability NAME ...] -- <command...>",
       "worker loop: claim an item, run the command with COORD_* variables (COORD_ITEM_ID, "
       "COORD_LEASE, ...) while heartbeating, complete on exit 0, else fail (retryable); stops "
       "(and is marked stopped) when nothing is left",
       {"worker", "ttl", "poll", "max-items", "patience", "capability"},
       {},
       1,
       1,
       true,
       RunWork});
}

}  // namespace coordctl
