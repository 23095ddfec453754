#include "storage/etcd_commit_queue.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "storage/etcd_client.h"

namespace storage {
namespace {

// A commit's bytes inside a batch: its Txn, and the RequestOp around it (two tags, two lengths).
int64_t BytesInBatch(const EtcdCommit& commit) { return commit.bytes + 12; }

}  // namespace

std::vector<size_t> ChooseBatch(const std::vector<const EtcdCommit*>& pending, int64_t max_commits,
                                int64_t max_bytes) {
  std::vector<size_t> chosen;
  if (pending.empty()) return chosen;
  absl::flat_hash_set<std::string_view> read;
  absl::flat_hash_set<std::string_view> written;
  int64_t bytes = 0;
  const auto take = [&](size_t i) {
    chosen.push_back(i);
    for (const std::string& key : pending[i]->reads) read.insert(key);
    for (const std::string& key : pending[i]->writes) written.insert(key);
    bytes += BytesInBatch(*pending[i]);
  };
  take(0);
  for (size_t i = 1; i < pending.size(); ++i) {
    if (static_cast<int64_t>(chosen.size()) >= max_commits) break;
    const EtcdCommit& commit = *pending[i];
    if (bytes + BytesInBatch(commit) > max_bytes) continue;
    bool conflict = false;
    for (const std::string& key : commit.reads) conflict = conflict || written.contains(key);
    for (const std::string& key : commit.writes) {
      conflict = conflict || written.contains(key) || read.contains(key);
    }
    if (!conflict) take(i);
  }
  return chosen;
}

absl::StatusOr<EtcdCommitQueue::Outcome> EtcdCommitQueue::Commit(EtcdCommit commit) {
  Waiter me(&commit);
  absl::MutexLock lock(&mu_);
  pending_.push_back(&me);
  while (true) {
    const auto ready = [this, &me]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return me.done || !sending_; };
    mu_.Await(absl::Condition(&ready));
    if (me.done) return std::move(me.result);
    // No batch in flight: this caller sends the next one, which need not hold its own commit
    // (the oldest goes first); it then waits for a later batch like the others.
    std::vector<const EtcdCommit*> commits;
    commits.reserve(pending_.size());
    for (const Waiter* w : pending_) commits.push_back(w->commit);
    const std::vector<size_t> chosen = ChooseBatch(commits, max_commits_, max_bytes_);
    std::vector<Waiter*> batch;
    batch.reserve(chosen.size());
    for (size_t i : chosen) batch.push_back(pending_[i]);
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    sending_ = true;
    ++batches_;
    commits_ += batch.size();
    mu_.Unlock();
    Send(batch);
    mu_.Lock();
    for (Waiter* w : batch) w->done = true;
    sending_ = false;
  }
}

void EtcdCommitQueue::Send(const std::vector<Waiter*>& batch) {
  if (batch.size() == 1) {
    absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(batch[0]->commit->txn);
    if (!response.ok()) {
      batch[0]->result = response.status();
    } else {
      batch[0]->result = Outcome{response->succeeded(), response->header().revision()};
    }
    return;
  }
  etcdserverpb::TxnRequest request;
  for (Waiter* w : batch) {
    *request.add_success()->mutable_request_txn() = std::move(w->commit->txn);
  }
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(request);
  if (response.ok() && response->responses_size() != static_cast<int>(batch.size())) {
    response = absl::InternalError(absl::StrFormat(
        "etcd answered a batch of %d transactions with %d results; their outcome is unknown",
        batch.size(), response->responses_size()));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!response.ok()) {
      batch[i]->result = response.status();
      continue;
    }
    const etcdserverpb::ResponseOp& op = response->responses(static_cast<int>(i));
    batch[i]->result = Outcome{op.has_response_txn() && op.response_txn().succeeded(),
                               response->header().revision()};
  }
}

uint64_t EtcdCommitQueue::batches() const {
  absl::MutexLock lock(&mu_);
  return batches_;
}

uint64_t EtcdCommitQueue::commits() const {
  absl::MutexLock lock(&mu_);
  return commits_;
}

}  // namespace storage
