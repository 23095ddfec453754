#include "coordinator/store/retention.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/work_store.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "coordinator/v1/work.pb.h"

namespace coordinator {
namespace {

using storage::Transaction;

bool Before(const google::protobuf::Timestamp& t, absl::Time cutoff) {
  return FromProtoTime(t) < cutoff;
}

// The budget of one pass and what it did.
class Pass {
 public:
  Pass(storage::Store* store, absl::Time cutoff, int64_t max_deletes, bool dry_run)
      : store_(store), cutoff_(cutoff), budget_(max_deletes), dry_run_(dry_run) {
    response_.set_dry_run(dry_run);
    *response_.mutable_cutoff() = ToProtoTime(cutoff);
  }

  absl::StatusOr<v1::CollectGarbageResponse> Run() {
    std::vector<IndexedA2ATask> tasks;
    RETURN_IF_ERROR(ForEachIndexedA2ATask(*store_, [&](IndexedA2ATask t) {
      tasks.push_back(std::move(t));
      return absl::OkStatus();
    }));
    absl::flat_hash_set<std::string> live_contexts;
    absl::flat_hash_map<std::string, std::vector<std::string>> tasks_by_context;
    for (const IndexedA2ATask& t : tasks) {
      if (!IsTerminal(t.state)) live_contexts.insert(t.context_id);
      tasks_by_context[t.context_id].push_back(t.task_id);
    }
    ASSIGN_OR_RETURN(std::vector<std::string> contexts, ContextCandidates(live_contexts));
    absl::flat_hash_set<std::string> collected_with_context;
    for (const std::string& id : contexts) {
      if (Exhausted()) break;
      bool done = true;
      for (const std::string& task_id : tasks_by_context[id]) {
        ASSIGN_OR_RETURN(bool task_done, CollectA2ATask(task_id, /*require_old=*/false));
        collected_with_context.insert(task_id);
        if (!task_done) done = false;
      }
      if (done) {
        ASSIGN_OR_RETURN(done, CollectContext(id));
      }
      if (!done) {
        if (budget_ <= 0) break;
        continue;  // it changed meanwhile: no longer a candidate
      }
      Listed(response_.mutable_context_ids(), id);
    }
    for (const IndexedA2ATask& t : tasks) {
      if (Exhausted()) break;
      if (!IsTerminal(t.state) || t.status_time >= cutoff_ ||
          collected_with_context.contains(t.task_id)) {
        continue;
      }
      ASSIGN_OR_RETURN(bool done, CollectA2ATask(t.task_id, /*require_old=*/true));
      if (!done) {
        if (budget_ <= 0) break;
        continue;
      }
      Listed(response_.mutable_a2a_task_ids(), t.task_id);
    }
    ASSIGN_OR_RETURN(std::vector<std::string> runs, RunCandidates());
    for (const std::string& id : runs) {
      if (Exhausted()) break;
      ASSIGN_OR_RETURN(bool done, CollectRun(id));
      if (!done) {
        if (budget_ <= 0) break;
        continue;
      }
      Listed(response_.mutable_run_ids(), id);
    }
    return response_;
  }

 private:
  bool Exhausted() {
    if (budget_ > 0) return false;
    response_.set_more(true);
    return true;
  }

  void Listed(google::protobuf::RepeatedPtrField<std::string>* ids, const std::string& id) {
    if (ids->size() < kMaxGcListedIds) *ids->Add() = id;
  }

  // Whether the context ended (its owner decides) before the cutoff.
  bool ContextExpired(const ContextStore::Life& life) const {
    return ContextStore::IsTerminal(life) && ContextStore::LastChange(life) < cutoff_;
  }

  bool RunExpired(const v1::Run& run) const {
    return WorkStore::IsTerminal(run) && Before(run.update_time(), cutoff_);
  }

  absl::StatusOr<std::vector<std::string>> ContextCandidates(
      const absl::flat_hash_set<std::string>& live_contexts) {
    std::vector<std::string> out;
    RETURN_IF_ERROR(
        ContextStore::ForEachContextId(*store_, [&](const std::string& id) -> absl::Status {
          if (live_contexts.contains(id)) return absl::OkStatus();
          ASSIGN_OR_RETURN(const ContextStore::Life life, ContextStore::ReadLife(*store_, id));
          if (ContextExpired(life)) out.push_back(id);
          return absl::OkStatus();
        }));
    return out;
  }

  absl::StatusOr<std::vector<std::string>> RunCandidates() {
    std::vector<std::string> out;
    RETURN_IF_ERROR(WorkStore::ForEachRun(
        *store_, [&](const std::string& id, const v1::Run& run) -> absl::Status {
          if (RunExpired(run)) out.push_back(id);
          return absl::OkStatus();
        }));
    return out;
  }

  // Runs `step` (one purge step of the record's owner, deleting at most `limit` keys) in
  // transactions until the record is gone or the budget is spent. True when it is gone.
  template <typename Step>
  absl::StatusOr<bool> Drain(Step step) {
    while (true) {
      if (budget_ <= 0) {
        response_.set_more(true);
        return false;
      }
      const int64_t limit = std::min(budget_, kGcBatchKeys);
      PurgeProgress progress;
      RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
        ASSIGN_OR_RETURN(progress, step(txn, limit));
        return absl::OkStatus();
      }));
      budget_ -= progress.deleted;
      response_.set_records(response_.records() + progress.deleted);
      if (progress.kept) return false;  // it changed: no longer a candidate
      if (progress.finished) return true;
      if (progress.deleted == 0) {
        // What is left (the parent and its index entries) does not fit in the budget left.
        response_.set_more(true);
        return false;
      }
    }
  }

  // A dry run counts what would go against the budget, in the same order.
  bool Count(int64_t n) {
    if (n > budget_) {
      response_.set_more(true);
      budget_ = 0;
      return false;
    }
    budget_ -= n;
    response_.set_records(response_.records() + n);
    return true;
  }

  absl::StatusOr<bool> CollectA2ATask(const std::string& task_id, bool require_old) {
    if (dry_run_) {
      ASSIGN_OR_RETURN(const int64_t n, CountA2ATaskPurge(*store_, task_id));
      return Count(n);
    }
    auto eligible = [&](const v1::StoredTask& header) {
      return IsTerminal(header.task().status().state()) &&
             (!require_old || Before(header.task().status().timestamp(), cutoff_));
    };
    return Drain([&](Transaction& txn, int64_t limit) {
      return PurgeA2ATaskStep(txn, task_id, limit, eligible);
    });
  }

  absl::StatusOr<bool> CollectContext(const std::string& id) {
    if (dry_run_) {
      ASSIGN_OR_RETURN(const int64_t n, ContextStore::CountPurge(*store_, id));
      return Count(n);
    }
    auto eligible = [&](const ContextStore::Life& life) -> absl::StatusOr<bool> {
      return ContextExpired(life);
    };
    return Drain([&](Transaction& txn, int64_t limit) {
      return ContextStore::PurgeStep(txn, id, limit, eligible);
    });
  }

  absl::StatusOr<bool> CollectRun(const std::string& id) {
    if (dry_run_) {
      ASSIGN_OR_RETURN(const int64_t n, WorkStore::CountPurge(*store_, id));
      return Count(n);
    }
    auto eligible = [&](const v1::Run& run) { return RunExpired(run); };
    return Drain([&](Transaction& txn, int64_t limit) {
      return WorkStore::PurgeStep(txn, id, limit, eligible);
    });
  }

  storage::Store* store_;
  const absl::Time cutoff_;
  int64_t budget_;
  const bool dry_run_;
  v1::CollectGarbageResponse response_;
};

}  // namespace

absl::Status ValidateRetentionOptions(const RetentionOptions& options) {
  if (options.terminal_ttl < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("retention_terminal_ttl must not be negative");
  }
  if (options.max_deletes_per_second <= 0) {
    return absl::InvalidArgumentError("retention_max_deletes_per_second must be positive");
  }
  if (options.period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("retention_period must be positive");
  }
  return absl::OkStatus();
}

int64_t TokenBucket::Available(absl::Time now) {
  if (now > last_) {
    tokens_ = std::min(capacity_, tokens_ + rate_ * absl::ToDoubleSeconds(now - last_));
    last_ = now;
  }
  return static_cast<int64_t>(tokens_);
}

void TokenBucket::Take(int64_t n) { tokens_ = std::max(0.0, tokens_ - static_cast<double>(n)); }

absl::StatusOr<v1::CollectGarbageResponse> Retention::RunPass(absl::Time cutoff,
                                                              int64_t max_deletes, bool dry_run) {
  if (max_deletes <= 0) return absl::InvalidArgumentError("max_deletes must be positive");
  return Pass(store_, cutoff, max_deletes, dry_run).Run();
}

RetentionTask::RetentionTask(Retention* retention, RetentionOptions options,
                             std::function<absl::Time()> now)
    : retention_(retention),
      options_(options),
      now_(std::move(now)),
      bucket_(static_cast<double>(options.max_deletes_per_second),
              static_cast<double>(options.max_deletes_per_second) *
                  std::max(1.0, absl::ToDoubleSeconds(options.period)),
              now_()) {
  if (options_.terminal_ttl > absl::ZeroDuration())
    thread_ = std::thread([this] {
      common::SetThreadName("retention");
      Loop();
    });
}

absl::StatusOr<v1::CollectGarbageResponse> RetentionTask::RunOnce() {
  const absl::Time now = now_();
  int64_t tokens = 0;
  {
    absl::MutexLock lock(&mu_);
    tokens = bucket_.Available(now);
  }
  if (tokens <= 0) {
    v1::CollectGarbageResponse empty;
    *empty.mutable_cutoff() = ToProtoTime(now - options_.terminal_ttl);
    empty.set_more(true);
    return empty;
  }
  absl::StatusOr<v1::CollectGarbageResponse> result =
      retention_->RunPass(now - options_.terminal_ttl, tokens, /*dry_run=*/false);
  if (result.ok()) {
    absl::MutexLock lock(&mu_);
    bucket_.Take(result->records());
  }
  return result;
}

void RetentionTask::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void RetentionTask::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.period)) return;
    }
    absl::StatusOr<v1::CollectGarbageResponse> result = RunOnce();
    if (!result.ok()) {
      LOG_WARN("retention pass failed (will retry): %s", result.status().message());
    } else if (result->records() > 0) {
      LOG_INFO("retention: deleted %d records (%d contexts, %d A2A tasks, %d runs)%s",
               result->records(), result->context_ids_size(), result->a2a_task_ids_size(),
               result->run_ids_size(), result->more() ? "; more next pass" : "");
    }
  }
}

}  // namespace coordinator
