#include "storage/etcd_read_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "storage/etcd_client.h"

namespace storage {

EtcdReadQueue::EtcdReadQueue(EtcdClient* client, int64_t max_reads)
    : client_(client),
      queue_(
          [max_reads](const std::vector<const std::string*>& pending) {
            // Reads never conflict: the oldest ones, up to the cluster's limit.
            const size_t n = std::min<size_t>(pending.size(), std::max<int64_t>(max_reads, 1));
            std::vector<size_t> chosen(n);
            for (size_t i = 0; i < n; ++i) chosen[i] = i;
            return chosen;
          },
          [this](const std::vector<std::string*>& keys,
                 std::vector<absl::StatusOr<etcdserverpb::RangeResponse>>& results) {
            Send(keys, results);
          }) {}

void EtcdReadQueue::Send(const std::vector<std::string*>& keys,
                         std::vector<absl::StatusOr<etcdserverpb::RangeResponse>>& results) {
  if (keys.size() == 1) {
    etcdserverpb::RangeRequest request;
    request.set_key(std::move(*keys[0]));
    results[0] = client_->Range(request);
    return;
  }
  etcdserverpb::TxnRequest request;
  for (std::string* key : keys) {
    request.add_success()->mutable_request_range()->set_key(std::move(*key));
  }
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(request);
  if (response.ok() && response->responses_size() != static_cast<int>(keys.size())) {
    response =
        absl::InternalError(absl::StrFormat("etcd answered a batch of %d reads with %d results",
                                            keys.size(), response->responses_size()));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!response.ok()) {
      results[i] = response.status();
      continue;
    }
    etcdserverpb::ResponseOp* op = response->mutable_responses(static_cast<int>(i));
    if (!op->has_response_range()) {
      results[i] = absl::InternalError("etcd answered a read of a batch with something else");
      continue;
    }
    etcdserverpb::RangeResponse range = std::move(*op->mutable_response_range());
    // The Ranges of one Txn read at its revision; the nested answers carry no header of their own.
    *range.mutable_header() = response->header();
    results[i] = std::move(range);
  }
}

}  // namespace storage
