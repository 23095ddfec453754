#include "storage/etcd_election.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "grpcpp/grpcpp.h"
#include "storage/etcd_client.h"

namespace storage {

absl::StatusOr<std::unique_ptr<EtcdElection>> EtcdElection::Start(
    const EtcdStoreOptions& options, const std::string& name, const std::string& candidate,
    absl::Duration ttl, std::function<void(bool leader)> on_change, absl::Duration follower_round) {
  if (name.empty() || candidate.empty()) {
    return absl::InvalidArgumentError("an election needs a name and a candidate");
  }
  if (ttl < absl::Seconds(2)) {
    return absl::InvalidArgumentError("an election's lease TTL must be at least 2 s");
  }
  if (follower_round < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("an election's follower round cannot be negative");
  }
  if (follower_round == absl::ZeroDuration()) follower_round = ttl / 4;
  EtcdClientOptions client_options = ClientOptionsOf(options);
  // A call must give up well within the lease, so that a leader cut off steps down in time.
  client_options.request_timeout = ttl / 4;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::Connect(client_options));
  std::unique_ptr<EtcdElection> election(
      new EtcdElection(std::move(client), absl::StrCat(options.prefix, "election/", name),
                       candidate, ttl, follower_round, std::move(on_change)));
  election->thread_ = std::thread([e = election.get()] {
    common::SetThreadName("etcd-election");
    e->Run();
  });
  return election;
}

EtcdElection::EtcdElection(std::unique_ptr<EtcdClient> client, std::string key,
                           std::string candidate, absl::Duration ttl, absl::Duration follower_round,
                           std::function<void(bool)> on_change)
    : client_(std::move(client)),
      key_(std::move(key)),
      candidate_(std::move(candidate)),
      ttl_(ttl),
      follower_round_(follower_round),
      on_change_(std::move(on_change)) {}

EtcdElection::~EtcdElection() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

void EtcdElection::AbandonForTest() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    resign_ = false;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::string> EtcdElection::Leader() {
  etcdserverpb::RangeRequest request;
  request.set_key(key_);
  // Not bound by the election's short request timeout (a quarter of the lease, which only its
  // keep-alives need): a loaded machine may take longer to answer a read.
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response,
                   client_->Range(request, std::max(ttl_, absl::Seconds(10))));
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

bool EtcdElection::Campaign(int64_t* held_at) {
  *held_at = 0;
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
  if (held.kvs_size() > 0 && held.kvs(0).lease() == lease_) return true;
  *held_at = response->header().revision();
  return false;
}

bool EtcdElection::WaitForVacancy(int64_t held_at, absl::Duration d) {
  const absl::Time until = absl::Now() + d;
  while (absl::Now() < until) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(until));
    auto stream = client_->OpenWatch(&context);
    if (stream == nullptr) {
      // No member connected: look again shortly.
      if (!Wait(std::min(absl::Milliseconds(200), until - absl::Now()))) return false;
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return false;
      watch_context_ = &context;
    }
    // Deletions of the key only, from the one after the revision at which it was held: none
    // is missed between the campaign and the watch.
    etcdserverpb::WatchRequest request;
    etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
    create->set_key(key_);
    create->set_start_revision(held_at + 1);
    create->add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
    bool vacant = false, canceled = false;
    etcdserverpb::WatchResponse response;
    if (stream->Write(request)) {
      while (!vacant && !canceled && stream->Read(&response)) {
        if (response.compact_revision() > 0) {
          // What happened since `held_at` is no longer kept: campaign to see.
          vacant = true;
        } else if (response.canceled()) {
          LOG_WARN("the etcd watch of %s was canceled (%s); campaigning every %s instead", key_,
                   response.cancel_reason(), absl::FormatDuration(follower_round_));
          canceled = true;
        }
        for (const mvccpb::Event& event : response.events()) {
          if (event.type() == mvccpb::Event::DELETE) vacant = true;
        }
      }
    }
    context.TryCancel();
    stream->Finish().IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      watch_context_ = nullptr;
      if (stop_) return false;
    }
    if (vacant) return true;
    if (canceled) return Wait(until - absl::Now());
    // The stream broke (a member lost; the round being over ends the loop): open another
    // after a short pause, resuming from the same revision.
    if (!Wait(std::min(absl::Milliseconds(200), until - absl::Now()))) return false;
  }
  return Wait(absl::ZeroDuration());
}

void EtcdElection::Run() {
  const absl::Duration round = ttl_ / 4;
  // When the last keep-alive the cluster confirmed was sent, on this process's monotonic clock
  // (a wall clock set back would stretch the leader's belief past its lease).
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_confirmed = Clock::time_point::min();
  const Clock::duration step_down_after = absl::ToChronoNanoseconds(ttl_ * 2 / 3);
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
    }
    if (!leader()) {
      // A candidate's lease must still be alive when it takes the key: keep it so while waiting.
      const Clock::time_point sent = Clock::now();
      absl::StatusOr<int64_t> left = client_->LeaseKeepAlive(lease_);
      if (!left.ok() || *left <= 0) {
        lease_ = 0;
        continue;
      }
      int64_t held_at = 0;
      if (Campaign(&held_at)) {
        // The keep-alive just confirmed, sent before the campaign, bounds the lease.
        last_confirmed = sent;
        SetLeader(true);
      } else if (held_at > 0 ? !WaitForVacancy(held_at, follower_round_) : !Wait(follower_round_)) {
        break;
      }
      continue;
    }
    // The leader's belief ends at `step_down_at` unless a keep-alive sent before then is
    // confirmed: no wait runs past it, so the check is not a round late. A keep-alive sent just
    // before it may take the client's request timeout (a quarter of the TTL) to fail, so the
    // belief ends at the latest 2/3 + 1/4 of the TTL after the last confirmed one was sent.
    const Clock::time_point step_down_at = last_confirmed + step_down_after;
    if (!Wait(std::min(round, absl::FromChrono(step_down_at - Clock::now())))) break;
    if (Clock::now() < step_down_at) {
      const Clock::time_point sent = Clock::now();
      absl::StatusOr<int64_t> left = client_->LeaseKeepAlive(lease_);
      if (left.ok() && *left > 0) {
        // The lease runs at least the TTL from when etcd renewed it, which is after `sent`.
        last_confirmed = sent;
        continue;
      }
      // Not confirmed (and not known gone): tried again after the next wait, unless that wait
      // reaches step_down_at.
      if (!left.ok() && Clock::now() < step_down_at) continue;
    }
    // The lease is gone, or may be about to go without this process knowing: step down
    // before another candidate can take over.
    SetLeader(false);
    lease_ = 0;
  }
  // Steps down first: on_change(false) has finished (the jobs stopped) before the revocation
  // lets another candidate take over.
  SetLeader(false);
  bool resign;
  {
    absl::MutexLock lock(&mu_);
    resign = resign_;
  }
  if (resign && lease_ != 0) {
    absl::Status revoked = client_->LeaseRevoke(lease_);
    if (!revoked.ok()) LOG_WARN("could not resign %s: %s", key_, revoked.message());
  }
}

}  // namespace storage
