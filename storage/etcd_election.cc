#include "storage/etcd_election.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "storage/etcd_client.h"

namespace storage {

absl::StatusOr<std::unique_ptr<EtcdElection>> EtcdElection::Start(
    const EtcdStoreOptions& options, const std::string& name, const std::string& candidate,
    absl::Duration ttl, std::function<void(bool leader)> on_change) {
  if (name.empty() || candidate.empty()) {
    return absl::InvalidArgumentError("an election needs a name and a candidate");
  }
  if (ttl < absl::Seconds(2)) {
    return absl::InvalidArgumentError("an election's lease TTL must be at least 2 s");
  }
  EtcdClientOptions client_options = ClientOptionsOf(options);
  // A call must give up well within the lease, so that a leader cut off steps down in time.
  client_options.request_timeout = ttl / 4;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::Connect(client_options));
  std::unique_ptr<EtcdElection> election(
      new EtcdElection(std::move(client), absl::StrCat(options.prefix, "election/", name),
                       candidate, ttl, std::move(on_change)));
  election->thread_ = std::thread([e = election.get()] { e->Run(); });
  return election;
}

EtcdElection::EtcdElection(std::unique_ptr<EtcdClient> client, std::string key,
                           std::string candidate, absl::Duration ttl,
                           std::function<void(bool)> on_change)
    : client_(std::move(client)),
      key_(std::move(key)),
      candidate_(std::move(candidate)),
      ttl_(ttl),
      on_change_(std::move(on_change)) {}

EtcdElection::~EtcdElection() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void EtcdElection::AbandonForTest() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    resign_ = false;
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::string> EtcdElection::Leader() {
  etcdserverpb::RangeRequest request;
  request.set_key(key_);
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response, client_->Range(request));
  if (response.kvs_size() == 0) return absl::NotFoundError("nobody leads");
  return response.kvs(0).value();
}

bool EtcdElection::Wait(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
  mu_.AwaitWithTimeout(absl::Condition(&stopping), d);
  return !stop_;
}

void EtcdElection::SetLeader(bool leader) {
  if (leader_.exchange(leader) == leader) return;
  LOG_INFO("%s %s %s", candidate_, leader ? "now leads" : "no longer leads", key_);
  if (on_change_) on_change_(leader);
}

bool EtcdElection::Campaign() {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* free = txn.add_compare();
  free->set_result(etcdserverpb::Compare::EQUAL);
  free->set_target(etcdserverpb::Compare::CREATE);
  free->set_key(key_);
  free->set_create_revision(0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key_);
  put->set_value(candidate_);
  put->set_lease(lease_);
  txn.add_failure()->mutable_request_range()->set_key(key_);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
  if (!response.ok()) return false;  // tried again on the next round
  if (response->succeeded()) return true;
  // Held: by this candidate's own lease after a lost answer, or by another.
  const etcdserverpb::RangeResponse& held = response->responses(0).response_range();
  return held.kvs_size() > 0 && held.kvs(0).lease() == lease_;
}

void EtcdElection::Run() {
  const absl::Duration round = ttl_ / 4;
  absl::Time last_confirmed = absl::InfinitePast();  // local monotonic-enough time
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
    }
    if (lease_ == 0) {
      absl::StatusOr<int64_t> lease = client_->LeaseGrant(absl::ToInt64Seconds(ttl_));
      if (!lease.ok()) {
        if (!Wait(round)) break;
        continue;
      }
      lease_ = *lease;
      last_confirmed = absl::Now();
    }
    if (!leader()) {
      // A candidate's lease must still be alive when it takes the key: keep it so while waiting.
      absl::StatusOr<int64_t> left = client_->LeaseKeepAlive(lease_);
      if (!left.ok() || *left <= 0) {
        lease_ = 0;
        continue;
      }
      if (Campaign()) {
        last_confirmed = absl::Now();
        SetLeader(true);
      } else if (!Wait(round)) {
        break;
      }
      continue;
    }
    if (!Wait(round)) break;
    absl::StatusOr<int64_t> left = client_->LeaseKeepAlive(lease_);
    if (left.ok() && *left > 0) {
      last_confirmed = absl::Now();
      continue;
    }
    if ((left.ok() && *left <= 0) || absl::Now() - last_confirmed > ttl_ * 2 / 3) {
      // The lease is gone, or may be about to go without this process knowing: step down
      // before another candidate can take over.
      SetLeader(false);
      lease_ = 0;
    }
  }
  bool resign;
  {
    absl::MutexLock lock(&mu_);
    resign = resign_;
  }
  if (resign && lease_ != 0) {
    absl::Status revoked = client_->LeaseRevoke(lease_);
    if (!revoked.ok()) LOG_WARN("could not resign %s: %s", key_, revoked.message());
  }
  SetLeader(false);
}

}  // namespace storage
