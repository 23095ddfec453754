#include "coordinator/store/work/reaper.h"

#include <utility>

#include "common/log.h"
#include "common/metrics.h"
#include "common/thread_name.h"

namespace coordinator {

Reaper::Reaper(WorkStore* work, absl::Duration period, Clock monotonic)
    : work_(work), period_(period), observations_(std::move(monotonic)) {
  thread_ = std::thread([this] {
    common::SetThreadName("work-reaper");
    Loop();
  });
}

Reaper::~Reaper() { Stop(); }

void Reaper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Reaper::Loop() {
  static common::Counter* const expired =
      common::MetricsRegistry::Default()
          .AddCounter("coordinator_work_leases_expired_total",
                      "Work leases that expired and were taken back by the reaper.")
          ->WithLabels({});
  while (true) {
    absl::StatusOr<int> reaped = work_->ReapExpired(&observations_);
    if (!reaped.ok()) {
      // A failed pass (a busy run, a disk error) is retried on the next tick.
      LOG_WARN("reaper: %s", reaped.status().ToString());
    } else if (*reaped > 0) {
      expired->Increment(static_cast<uint64_t>(*reaped));
      LOG_INFO("reaper: took back %d item(s) whose lease expired", *reaped);
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_)) return;
  }
}

}  // namespace coordinator
