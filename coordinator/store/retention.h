// Retention: records that reached a terminal state long ago are deleted, at a bounded rate.
//
// What is terminal, per record type (docs/storage.md, "Retention"):
//   - a context (TaskContext) whose status is COMPLETED, FAILED or CANCELED; its commands and
//     conversation go with it, and so do its A2A tasks. A conversation without a TaskContext
//     counts as ended when it last changed before the cutoff. Either way a context keeps
//     everything while one of its A2A tasks is still running;
//   - an A2A task in COMPLETED, FAILED, CANCELED or REJECTED, with its history, event log, push
//     configs and push log, its index entry and any queued delivery;
//   - a work run that is COMPLETED, or FAILED with nothing pending or running, with its items.
// "Long ago" is the record's last change (update_time; an A2A task's status timestamp) before
// the cutoff. Retry and breaker state is not collected here: CleanupTask / breaker cleanup
// remove it, as before.
//
// A pass deletes at most `max_deletes` keys. One transaction deletes at most kGcBatchKeys keys
// of one record, children first and the parent record (header) last, and re-checks under the
// parent's lock that the record is still terminal and old, so a record that came back to life
// is kept and a record bigger than one batch is finished by the next transactions (or passes).
// The background task refills a token bucket at --retention_max_deletes_per_second and gives
// each pass the tokens it holds, so deletions never outrun that rate.
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
