// Retention: records that reached a terminal state long ago are deleted, at a bounded rate.
//
// Retention only schedules, rate-limits, counts and lists, and decides "long ago" against the
// cutoff. What is terminal, how a record is deleted with everything under it, and how the
// candidates are found belong to the store that writes the records (docs/storage.md,
// "Retention"):
//   - a context: ContextStore::IsTerminal (COMPLETED, FAILED or CANCELED; a conversation
//     without a TaskContext counts as ended) and ContextStore::PurgeStep (its commands, its
//     conversation through ConversationStore, its agent-index entry). Its A2A tasks go with it,
//     and a context keeps everything while one of its A2A tasks is still running;
//   - an A2A task: IsTerminal(state) (COMPLETED, FAILED, CANCELED, REJECTED) and
//     PurgeA2ATaskStep (history, event log, push configs and push log, index entry, queued
//     deliveries and webhook calls);
//   - a work run: WorkStore::IsTerminal (COMPLETED, or FAILED with nothing pending or running)
//     and WorkStore::PurgeStep (items, pending entries, lease entries).
// "Long ago" is the record's last change (update_time; a conversation's update_time without a
// TaskContext; an A2A task's status timestamp) before the cutoff. Retry and breaker state is
// not collected here: CleanupTask / breaker cleanup remove it (TaskStateStore::TxnRemoveTask).
//
// A pass deletes at most `max_deletes` keys. One transaction (one purge step) deletes at most
// kGcBatchKeys keys of one record, children first and the parent record (header) last, and
// re-checks under the parent's lock that the record is still terminal and old, so a record that
// came back to life is kept and a record bigger than one batch is finished by the next
// transactions (or passes). The background task refills a token bucket at
// --retention_max_deletes_per_second and gives each pass the tokens it holds, so deletions never
// outrun that rate.
#ifndef COORDINATOR_STORE_RETENTION_H_
#define COORDINATOR_STORE_RETENTION_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/v1/admin.pb.h"
#include "storage/store.h"

namespace coordinator {

// Keys one transaction deletes at most.
inline constexpr int64_t kGcBatchKeys = 500;
// Largest max_deletes of one CollectGarbage call.
inline constexpr int64_t kMaxGcDeletesPerCall = 1000000;
// Ids a response lists per kind at most (the counts stay exact).
inline constexpr int kMaxGcListedIds = 1000;

struct RetentionOptions {
  // Terminal records older than this are deleted; zero (the default) keeps them forever and
  // turns the background task off.
  absl::Duration terminal_ttl = absl::ZeroDuration();
  // Rate bound of the background task, in deleted keys per second (default 1000).
  int64_t max_deletes_per_second = 1000;
  // How often the background task runs a pass (default 10s).
  absl::Duration period = absl::Seconds(10);
};

[[nodiscard]] absl::Status ValidateRetentionOptions(const RetentionOptions& options);

// A token bucket: `rate` tokens a second, at most `capacity` held. Not thread-safe.
class TokenBucket {
 public:
  TokenBucket(double rate, double capacity, absl::Time now)
      : rate_(rate), capacity_(capacity), tokens_(0), last_(now) {}
  // Whole tokens held at `now`.
  int64_t Available(absl::Time now);
  // Spends `n` tokens (at most what is held).
  void Take(int64_t n);

 private:
  const double rate_;
  const double capacity_;
  double tokens_;
  absl::Time last_;
};

class Retention {
 public:
  explicit Retention(storage::Store* store) : store_(store) {}

  // One pass: collects (or with `dry_run`, lists) what ended before `cutoff`, deleting at most
  // `max_deletes` keys (positive).
  [[nodiscard]] absl::StatusOr<v1::CollectGarbageResponse> RunPass(absl::Time cutoff,
                                                                   int64_t max_deletes,
                                                                   bool dry_run);

 private:
  storage::Store* store_;  // not owned
};

// Runs Retention passes every options.period on a thread of its own while terminal_ttl > 0.
class RetentionTask {
 public:
  // `now` is the clock (absl::Now by default; tests pass their own).
  RetentionTask(Retention* retention, RetentionOptions options,
                std::function<absl::Time()> now = absl::Now);
  ~RetentionTask() { Stop(); }
  RetentionTask(const RetentionTask&) = delete;
  RetentionTask& operator=(const RetentionTask&) = delete;

  // Runs one pass with the tokens the bucket holds at now(); what the pass deleted is spent.
  [[nodiscard]] absl::StatusOr<v1::CollectGarbageResponse> RunOnce();
  void Stop();

 private:
  void Loop();

  Retention* retention_;  // not owned
  const RetentionOptions options_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  TokenBucket bucket_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RETENTION_H_
