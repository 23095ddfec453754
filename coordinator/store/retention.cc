#include "coordinator/store/retention.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "coordinator/store/a2a_tasks.h"
#include "coordinator/store/keys.h"
#include "coordinator/store/record_codec.h"
#include "coordinator/store/time_util.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/stored.pb.h"
#include "coordinator/v1/work.pb.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;

bool IsTerminalContext(v1::ContextStatus s) {
  return s == v1::CONTEXT_STATUS_COMPLETED || s == v1::CONTEXT_STATUS_FAILED ||
         s == v1::CONTEXT_STATUS_CANCELED;
}

bool IsTerminalRun(const v1::Run& run) {
  if (run.status() == v1::RUN_STATUS_COMPLETED) return true;
  return run.status() == v1::RUN_STATUS_FAILED && run.counts().pending() == 0 &&
         run.counts().running() == 0;
}

bool Before(const google::protobuf::Timestamp& t, absl::Time cutoff) {
  return FromProtoTime(t) < cutoff;
}

std::string A2AIndexKey(const v1::StoredTask& header) {
  const int64_t micros = absl::ToUnixMicros(FromProtoTime(header.task().status().timestamp()));
  return keys::A2ATaskByTime(
      std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(std::max<int64_t>(micros, 0)),
      header.task().id());
}

std::string PushPendingPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(keys::kA2APushPending).AddString(task_id).key();
}

// Deletes (or counts) the keys of [lower, upper) in `cf` except `keep`, at most `limit` of them.
// Returns how many; sets *finished when none is left.
absl::StatusOr<int64_t> DeleteRange(Transaction& txn, ColumnFamily cf, const std::string& lower,
                                    const std::string& upper,
                                    const absl::flat_hash_set<std::string>& keep, int64_t limit,
                                    bool* finished) {
  int64_t n = 0;
  *finished = false;
  std::unique_ptr<storage::Iterator> it = txn.NewIterator(cf, lower, upper);
  for (; it->Valid(); it->Next()) {
    if (keep.contains(it->key())) continue;
    if (n == limit) return n;
    RETURN_IF_ERROR(txn.Delete(cf, it->key()));
    ++n;
  }
  RETURN_IF_ERROR(it->status());
  *finished = true;
  return n;
}

// Counts the keys of [lower, upper) in `cf` (for dry runs).
absl::StatusOr<int64_t> CountRange(storage::Store& store, ColumnFamily cf, const std::string& lower,
                                   const std::string& upper) {
  int64_t n = 0;
  std::unique_ptr<storage::Iterator> it = store.NewIterator(cf, lower, upper);
  for (; it->Valid(); it->Next()) ++n;
  RETURN_IF_ERROR(it->status());
  return n;
}

// One A2A task as the index shows it.
struct IndexedTask {
  std::string task_id;
  std::string context_id;
  bool terminal = false;
  absl::Time status_time;
};

// The budget of one pass and what it did.
class Pass {
 public:
  Pass(storage::Store* store, absl::Time cutoff, int64_t max_deletes, bool dry_run)
      : store_(store), cutoff_(cutoff), budget_(max_deletes), dry_run_(dry_run) {
    response_.set_dry_run(dry_run);
    *response_.mutable_cutoff() = ToProtoTime(cutoff);
  }

  absl::StatusOr<v1::CollectGarbageResponse> Run() {
    ASSIGN_OR_RETURN(std::vector<IndexedTask> tasks, ReadTaskIndex());
    absl::flat_hash_set<std::string> live_contexts;
    absl::flat_hash_map<std::string, std::vector<std::string>> tasks_by_context;
    for (const IndexedTask& t : tasks) {
      if (!t.terminal) live_contexts.insert(t.context_id);
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
    for (const IndexedTask& t : tasks) {
      if (Exhausted()) break;
      if (!t.terminal || t.status_time >= cutoff_ || collected_with_context.contains(t.task_id)) {
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

  absl::StatusOr<std::vector<IndexedTask>> ReadTaskIndex() {
    std::vector<IndexedTask> out;
    const std::string prefix(1, static_cast<char>(keys::kA2ATasksByTime));
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) {
      v1::TaskIndexEntry entry;
      RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      ASSIGN_OR_RETURN(uint64_t inverted, reader.ReadUint64());
      ASSIGN_OR_RETURN(std::string task_id, reader.ReadString());
      IndexedTask t;
      t.task_id = std::move(task_id);
      t.context_id = entry.context_id();
      t.terminal = IsTerminal(entry.state());
      t.status_time = absl::FromUnixMicros(
          static_cast<int64_t>(std::numeric_limits<uint64_t>::max() - inverted));
      out.push_back(std::move(t));
    }
    RETURN_IF_ERROR(it->status());
    return out;
  }

  // Whether the context's header (or, without one, its conversation meta) says it ended before
  // the cutoff. `header` and `meta` are the raw records, empty when absent.
  absl::StatusOr<bool> ContextExpired(const absl::StatusOr<std::string>& header,
                                      const absl::StatusOr<std::string>& meta) {
    if (header.ok()) {
      v1::TaskContext context;
      RETURN_IF_ERROR(DecodeRecord(*header, &context));
      return IsTerminalContext(context.status()) && Before(context.update_time(), cutoff_);
    }
    if (!absl::IsNotFound(header.status())) return header.status();
    if (meta.ok()) {
      v1::ConversationMeta m;
      RETURN_IF_ERROR(DecodeRecord(*meta, &m));
      return Before(m.update_time(), cutoff_);
    }
    if (!absl::IsNotFound(meta.status())) return meta.status();
    return false;
  }

  absl::StatusOr<std::vector<std::string>> ContextCandidates(
      const absl::flat_hash_set<std::string>& live_contexts) {
    std::vector<std::string> out;
    const std::string prefix(1, static_cast<char>(keys::kContextScoped));
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
    while (it->Valid()) {
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      ASSIGN_OR_RETURN(std::string id, reader.ReadString());
      // Straight past this context's records to the next context.
      it->Seek(storage::PrefixUpperBound(keys::ContextPrefix(id)));
      if (live_contexts.contains(id)) continue;
      ASSIGN_OR_RETURN(
          bool expired,
          ContextExpired(store_->Get(ColumnFamily::kContexts, keys::ContextHeader(id)),
                         store_->Get(ColumnFamily::kContexts, keys::ConversationMeta(id))));
      if (expired) out.push_back(std::move(id));
    }
    RETURN_IF_ERROR(it->status());
    return out;
  }

  absl::StatusOr<std::vector<std::string>> RunCandidates() {
    std::vector<std::string> out;
    const std::string prefix(1, static_cast<char>(keys::kWorkRunScoped));
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kWork, prefix, storage::PrefixUpperBound(prefix));
    while (it->Valid()) {
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      ASSIGN_OR_RETURN(std::string id, reader.ReadString());
      const bool is_header = it->key() == keys::RunHeader(id);
      v1::WorkRunRecord record;
      if (is_header) RETURN_IF_ERROR(DecodeRecord(it->value(), &record));
      it->Seek(storage::PrefixUpperBound(keys::RunPrefix(id)));
      if (is_header && IsTerminalRun(record.run()) && Before(record.run().update_time(), cutoff_)) {
        out.push_back(std::move(id));
      }
    }
    RETURN_IF_ERROR(it->status());
    return out;
  }

  // Runs `step` (one transaction deleting at most `limit` keys, reporting how many and whether
  // the record is gone) until the record is gone or the budget is spent. True when it is gone.
  template <typename Step>
  absl::StatusOr<bool> Drain(Step step) {
    while (true) {
      if (budget_ <= 0) {
        response_.set_more(true);
        return false;
      }
      const int64_t limit = std::min(budget_, kGcBatchKeys);
      int64_t deleted = 0;
      bool finished = false;
      bool skipped = false;
      RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
        deleted = 0;
        finished = false;
        skipped = false;
        return step(txn, limit, &deleted, &finished, &skipped);
      }));
      budget_ -= deleted;
      response_.set_records(response_.records() + deleted);
      if (skipped) return false;  // it changed: no longer a candidate
      if (finished) return true;
      if (deleted == 0) {
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
    const std::string prefix = keys::A2ATaskPrefix(task_id);
    const std::string header_key = keys::A2ATaskHeader(task_id);
    if (dry_run_) {
      ASSIGN_OR_RETURN(int64_t n, CountRange(*store_, ColumnFamily::kA2A, prefix,
                                             storage::PrefixUpperBound(prefix)));
      int64_t queued = 0;
      const std::vector<std::string> queues = {keys::A2ADeliveryTaskPrefix(task_id),
                                               PushPendingPrefix(task_id)};
      for (const std::string& p : queues) {
        ASSIGN_OR_RETURN(int64_t q,
                         CountRange(*store_, ColumnFamily::kA2A, p, storage::PrefixUpperBound(p)));
        queued += q;
      }
      return Count(n + queued + 1);  // + the index entry
    }
    return Drain([&](Transaction& txn, int64_t limit, int64_t* deleted, bool* finished,
                     bool* skipped) -> absl::Status {
      absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, header_key);
      if (absl::IsNotFound(raw.status())) {
        *finished = true;  // someone else removed it
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(raw.status());
      v1::StoredTask header;
      RETURN_IF_ERROR(DecodeRecord(*raw, &header));
      if (!IsTerminal(header.task().status().state()) ||
          (require_old && !Before(header.task().status().timestamp(), cutoff_))) {
        *skipped = true;
        return absl::OkStatus();
      }
      bool done = false;
      const absl::flat_hash_set<std::string> keep = {header_key};
      ASSIGN_OR_RETURN(
          *deleted, DeleteRange(txn, ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix),
                                keep, limit, &done));
      if (!done) return absl::OkStatus();
      // The rest is small: the header, its index entry, queued deliveries and webhook calls. It
      // goes in one transaction, and only when it fits in the budget.
      std::vector<std::string> rest;
      const std::vector<std::string> queues = {keys::A2ADeliveryTaskPrefix(task_id),
                                               PushPendingPrefix(task_id)};
      for (const std::string& p : queues) {
        std::unique_ptr<storage::Iterator> it =
            txn.NewIterator(ColumnFamily::kA2A, p, storage::PrefixUpperBound(p));
        for (; it->Valid(); it->Next()) rest.emplace_back(it->key());
        RETURN_IF_ERROR(it->status());
      }
      if (*deleted + static_cast<int64_t>(rest.size()) + 2 > limit) return absl::OkStatus();
      for (const std::string& key : rest) RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
      *deleted += static_cast<int64_t>(rest.size());
      RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, A2AIndexKey(header)));
      RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, header_key));
      *deleted += 2;
      *finished = true;
      return absl::OkStatus();
    });
  }

  absl::StatusOr<bool> CollectContext(const std::string& id) {
    const std::string prefix = keys::ContextPrefix(id);
    const std::string header_key = keys::ContextHeader(id);
    const std::string meta_key = keys::ConversationMeta(id);
    if (dry_run_) {
      ASSIGN_OR_RETURN(int64_t n, CountRange(*store_, ColumnFamily::kContexts, prefix,
                                             storage::PrefixUpperBound(prefix)));
      absl::StatusOr<std::string> header = store_->Get(ColumnFamily::kContexts, header_key);
      v1::TaskContext context;
      if (header.ok()) RETURN_IF_ERROR(DecodeRecord(*header, &context));
      return Count(n + (context.agent().empty() ? 0 : 1));
    }
    return Drain([&](Transaction& txn, int64_t limit, int64_t* deleted, bool* finished,
                     bool* skipped) -> absl::Status {
      // Both parents, as DeleteContext does: no command or message is added meanwhile.
      absl::StatusOr<std::string> header = txn.GetForUpdate(ColumnFamily::kContexts, header_key);
      absl::StatusOr<std::string> meta = txn.GetForUpdate(ColumnFamily::kContexts, meta_key);
      if (absl::IsNotFound(header.status()) && absl::IsNotFound(meta.status())) {
        *finished = true;
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(bool expired, ContextExpired(header, meta));
      if (!expired) {
        *skipped = true;
        return absl::OkStatus();
      }
      bool done = false;
      const absl::flat_hash_set<std::string> keep = {header_key, meta_key};
      ASSIGN_OR_RETURN(*deleted,
                       DeleteRange(txn, ColumnFamily::kContexts, prefix,
                                   storage::PrefixUpperBound(prefix), keep, limit, &done));
      if (!done) return absl::OkStatus();
      // The parents and the index entry go together, when they fit in the budget.
      v1::TaskContext context;
      if (header.ok()) RETURN_IF_ERROR(DecodeRecord(*header, &context));
      const int64_t parents = (header.ok() ? 1 : 0) + (meta.ok() ? 1 : 0) +
                              (header.ok() && !context.agent().empty() ? 1 : 0);
      if (*deleted + parents > limit) return absl::OkStatus();
      if (header.ok()) {
        if (!context.agent().empty()) {
          RETURN_IF_ERROR(txn.Delete(ColumnFamily::kIndex, keys::AgentIndex(context.agent(), id)));
          ++*deleted;
        }
        RETURN_IF_ERROR(txn.Delete(ColumnFamily::kContexts, header_key));
        ++*deleted;
      }
      if (meta.ok()) {
        RETURN_IF_ERROR(txn.Delete(ColumnFamily::kContexts, meta_key));
        ++*deleted;
      }
      *finished = true;
      return absl::OkStatus();
    });
  }

  absl::StatusOr<bool> CollectRun(const std::string& id) {
    const std::string prefix = keys::RunPrefix(id);
    const std::string header_key = keys::RunHeader(id);
    if (dry_run_) {
      ASSIGN_OR_RETURN(int64_t n, CountRange(*store_, ColumnFamily::kWork, prefix,
                                             storage::PrefixUpperBound(prefix)));
      return Count(n);
    }
    return Drain([&](Transaction& txn, int64_t limit, int64_t* deleted, bool* finished,
                     bool* skipped) -> absl::Status {
      absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kWork, header_key);
      if (absl::IsNotFound(raw.status())) {
        *finished = true;
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(raw.status());
      v1::WorkRunRecord record;
      RETURN_IF_ERROR(DecodeRecord(*raw, &record));
      if (!IsTerminalRun(record.run()) || !Before(record.run().update_time(), cutoff_)) {
        *skipped = true;
        return absl::OkStatus();
      }
      bool done = false;
      const absl::flat_hash_set<std::string> keep = {header_key};
      ASSIGN_OR_RETURN(
          *deleted, DeleteRange(txn, ColumnFamily::kWork, prefix, storage::PrefixUpperBound(prefix),
                                keep, limit, &done));
      if (!done || *deleted + 1 > limit) return absl::OkStatus();
      RETURN_IF_ERROR(txn.Delete(ColumnFamily::kWork, header_key));
      ++*deleted;
      *finished = true;
      return absl::OkStatus();
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
  if (options_.terminal_ttl > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
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
