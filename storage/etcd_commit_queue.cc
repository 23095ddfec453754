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

EtcdCommitQueue::EtcdCommitQueue(EtcdClient* client, int64_t max_commits, int64_t max_bytes)
    : client_(client),
      queue_(
          [max_commits, max_bytes](const std::vector<const EtcdCommit*>& pending) {
            return ChooseBatch(pending, max_commits, max_bytes);
          },
          [this](const std::vector<EtcdCommit*>& batch,
                 std::vector<absl::StatusOr<Outcome>>& results) { Send(batch, results); }) {}

void EtcdCommitQueue::Send(const std::vector<EtcdCommit*>& batch,
                           std::vector<absl::StatusOr<Outcome>>& results) {
  if (batch.size() == 1) {
    absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(batch[0]->txn);
    if (!response.ok()) {
      results[0] = response.status();
    } else {
      results[0] = Outcome{response->succeeded(), response->header().revision()};
    }
    return;
  }
  etcdserverpb::TxnRequest request;
  for (EtcdCommit* commit : batch) {
    *request.add_success()->mutable_request_txn() = std::move(commit->txn);
  }
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(request);
  if (response.ok() && response->responses_size() != static_cast<int>(batch.size())) {
    response = absl::InternalError(absl::StrFormat(
        "etcd answered a batch of %d transactions with %d results; their outcome is unknown",
        batch.size(), response->responses_size()));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!response.ok()) {
      results[i] = response.status();
      continue;
    }
    const etcdserverpb::ResponseOp& op = response->responses(static_cast<int>(i));
    results[i] = Outcome{op.has_response_txn() && op.response_txn().succeeded(),
                         response->header().revision()};
  }
}

}  // namespace storage
