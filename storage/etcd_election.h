// One leader among the coordinator replicas of an etcd data set, for a named role (the
// background jobs): the leader holds the key <prefix>election/<name> under an etcd lease it
// keeps alive. When the leader resigns its lease is revoked and the key goes at once; when it
// dies the lease expires at most `ttl` after its last keep-alive, and etcd deletes the key.
// Followers watch the key from the revision at which they found it held and campaign as soon
// as it is deleted, so the role moves then, not at a follower's next round; the round (a
// keep-alive of the follower's own lease and a campaign, every quarter of the TTL) stays as
// the fallback for a watch that breaks.
//
// A leader steps down by itself (on_change(false)) once it has gone two thirds of the TTL without
// a keep-alive the cluster confirmed (or, with one in flight then, when that one fails, at most
// a quarter of the TTL later), before the lease can have expired, so two candidates never both
// believe they lead, whatever their clocks say: only durations measured by each process on its
// own monotonic clock are compared, never times of two machines. A leader that resigns has
// stepped down (on_change(false) returned) before it revokes its lease.
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

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace storage {

class EtcdClient;

class EtcdElection {
 public:
  // Campaigns as `candidate` (a replica's name, shown by Leader()) until destroyed.
  // `on_change(true)` runs when this candidate becomes the leader and `on_change(false)` when it
  // stops being one, on the election's own thread, one at a time; it may take a while (start or
  // stop jobs). Fails only when the cluster cannot be reached at all.
  // `follower_round` is how often a follower campaigns without having seen the key go (zero,
  // the default: a quarter of the TTL); tests make it long to show that the watch moved the
  // role. A round longer than the TTL lets the follower's own lease lapse between rounds,
  // which only costs a new lease when it campaigns.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdElection>> Start(
      const EtcdStoreOptions& options, const std::string& name, const std::string& candidate,
      absl::Duration ttl, std::function<void(bool leader)> on_change,
      absl::Duration follower_round = absl::ZeroDuration());

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
               absl::Duration ttl, absl::Duration follower_round,
               std::function<void(bool)> on_change);
  void Run();
  // One attempt to take the key under `lease_`: true when this candidate holds it. When
  // another holds it, `*held_at` is the revision at which the cluster said so (0 when the
  // attempt failed).
  bool Campaign(int64_t* held_at);
  // Waits up to `d`; false when stopping.
  bool Wait(absl::Duration d);
  // Waits up to `d` for the key to be deleted after revision `held_at` (its holder's lease
  // expired or was revoked), watching it; false when stopping. A watch that breaks is opened
  // again; one the cluster cancels leaves the rest of `d` to the clock.
  bool WaitForVacancy(int64_t held_at, absl::Duration d);
  void SetLeader(bool leader);

  const std::unique_ptr<EtcdClient> client_;
  const std::string key_;
  const std::string candidate_;
  const absl::Duration ttl_;
  const absl::Duration follower_round_;
  const std::function<void(bool)> on_change_;
  std::atomic<bool> leader_{false};
  int64_t lease_ = 0;  // the election thread's
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool resign_ ABSL_GUARDED_BY(mu_) = true;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;  // of the open watch
  std::thread thread_;
};

}  // namespace storage

#endif  // STORAGE_ETCD_ELECTION_H_
