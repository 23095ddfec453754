// One leader among the coordinator replicas of an etcd data set, for a named role (the
// background jobs): the leader holds the key <prefix>election/<name> under an etcd lease it
// keeps alive. When the leader resigns its lease is revoked and the key goes at once; when it
// dies the lease expires after `ttl` and another candidate takes the key.
//
// A leader steps down by itself (on_change(false)) once it has gone two thirds of the TTL without
// a keep-alive the cluster confirmed, before the lease can have expired, so two candidates never
// both believe they lead, whatever their clocks say: only durations measured by each process on
// its own monotonic clock are compared, never times of two machines.
#ifndef STORAGE_ETCD_ELECTION_H_
#define STORAGE_ETCD_ELECTION_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/etcd_store.h"

namespace storage {

class EtcdClient;

class EtcdElection {
 public:
  // Campaigns as `candidate` (a replica's name, shown by Leader()) until destroyed.
  // `on_change(true)` runs when this candidate becomes the leader and `on_change(false)` when it
  // stops being one, on the election's own thread, one at a time; it may take a while (start or
  // stop jobs). Fails only when the cluster cannot be reached at all.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdElection>> Start(
      const EtcdStoreOptions& options, const std::string& name, const std::string& candidate,
      absl::Duration ttl, std::function<void(bool leader)> on_change);

  // Resigns (revokes the lease, so another candidate takes over at once) and stops.
  ~EtcdElection();
  EtcdElection(const EtcdElection&) = delete;
  EtcdElection& operator=(const EtcdElection&) = delete;

  bool leader() const { return leader_.load(); }
  // The candidate that holds the role now, as the cluster says; NOT_FOUND when nobody does.
  [[nodiscard]] absl::StatusOr<std::string> Leader();

  // For tests: stops campaigning and keeping the lease alive without revoking it, as a process
  // that died would; the role passes on when the lease expires.
  void AbandonForTest();

 private:
  EtcdElection(std::unique_ptr<EtcdClient> client, std::string key, std::string candidate,
               absl::Duration ttl, std::function<void(bool)> on_change);
  void Run();
  // One attempt to take the key under `lease_`: true when this candidate holds it.
  bool Campaign();
  // Waits up to `d`; false when stopping.
  bool Wait(absl::Duration d);
  void SetLeader(bool leader);

  const std::unique_ptr<EtcdClient> client_;
  const std::string key_;
  const std::string candidate_;
  const absl::Duration ttl_;
  const std::function<void(bool)> on_change_;
  std::atomic<bool> leader_{false};
  int64_t lease_ = 0;  // the election thread's
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool resign_ ABSL_GUARDED_BY(mu_) = true;
  std::thread thread_;
};

}  // namespace storage

#endif  // STORAGE_ETCD_ELECTION_H_
