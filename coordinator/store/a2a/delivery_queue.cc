#include "coordinator/store/a2a/delivery_queue.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/a2a/records.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "storage/key_codec.h"

namespace coordinator {

using storage::ColumnFamily;
using storage::Transaction;

namespace a2a_records {

absl::Status QueueDelivery(Transaction& txn, v1::StoredTask& header, int64_t history_seq,
                           const google::protobuf::Timestamp& now) {
  v1::PendingDelivery delivery;
  delivery.set_task_id(header.task().id());
  delivery.set_tenant(header.tenant());
  delivery.set_history_seq(history_seq);
  *delivery.mutable_next_attempt_time() = now;
  *delivery.mutable_enqueue_time() = now;
  header.set_pending_deliveries(header.pending_deliveries() + 1);
  RETURN_IF_ERROR(
      Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, header.tenant(), header.task().id(), 1));
  return txn.Put(ColumnFamily::kA2A,
                 keys::A2ADelivery(header.task().id(), static_cast<uint64_t>(history_seq)),
                 EncodeRecord(delivery));
}

absl::StatusOr<bool> DequeueDelivery(Transaction& txn, v1::StoredTask& header,
                                     int64_t history_seq) {
  const std::string key = keys::A2ADelivery(header.task().id(), static_cast<uint64_t>(history_seq));
  absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
  if (absl::IsNotFound(existing.status())) return false;
  RETURN_IF_ERROR(existing.status());
  RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
  RETURN_IF_ERROR(
      Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, header.tenant(), header.task().id(), -1));
  header.set_pending_deliveries(std::max<int64_t>(header.pending_deliveries() - 1, 0));
  return true;
}

absl::Status DropDeliveries(Transaction& txn, v1::StoredTask& header) {
  const std::string prefix = keys::A2ADeliveryTaskPrefix(header.task().id());
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  int64_t dropped = 0;
  for (; it->Valid(); it->Next()) {
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, it->key()));
    ++dropped;
  }
  RETURN_IF_ERROR(it->status());
  RETURN_IF_ERROR(Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, header.tenant(),
                                  header.task().id(), -dropped));
  header.set_pending_deliveries(0);
  return absl::OkStatus();
}

}  // namespace a2a_records

TallySource A2ADeliveryQueue::Totals() {
  return [](storage::Store& store, const TallySink& add) -> absl::Status {
    return ForEachDelivery(store, [&](const v1::PendingDelivery& delivery) -> absl::Status {
      add(TallyDelta{Tally::kDeliveriesQueued, delivery.tenant(), 1, 0});
      return absl::OkStatus();
    });
  };
}

absl::Status A2ADeliveryQueue::ForEachDelivery(
    storage::Store& store, absl::FunctionRef<absl::Status(const v1::PendingDelivery&)> visit) {
  const std::string prefix = keys::A2ADeliveriesPrefix();
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    v1::PendingDelivery d;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &d));
    RETURN_IF_ERROR(visit(d));
  }
  return it->status();
}

absl::StatusOr<std::vector<v1::PendingDelivery>> A2ADeliveryQueue::PendingDeliveries(int max) {
  const std::string prefix = keys::A2ADeliveriesPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PendingDelivery> out;
  for (; it->Valid() && static_cast<int>(out.size()) < max; it->Next()) {
    v1::PendingDelivery d;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &d));
    out.push_back(std::move(d));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<v1::PendingDelivery> A2ADeliveryQueue::GetDelivery(absl::string_view task_id,
                                                                  int64_t history_seq) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  absl::StatusOr<std::string> raw = store_->Get(
      ColumnFamily::kA2A, keys::A2ADelivery(task_id, static_cast<uint64_t>(history_seq)));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(
        absl::StrCat("no queued delivery of message ", history_seq, " of task ", task_id));
  }
  RETURN_IF_ERROR(raw.status());
  v1::PendingDelivery delivery;
  RETURN_IF_ERROR(DecodeRecord(*raw, &delivery));
  return delivery;
}

absl::StatusOr<int64_t> A2ADeliveryQueue::DeliveryDone(absl::string_view task_id,
                                                       int64_t history_seq) {
  int64_t remaining = 0;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, a2a_records::LockTask(txn, task_id));
    remaining = header.pending_deliveries();
    ASSIGN_OR_RETURN(const bool dequeued, a2a_records::DequeueDelivery(txn, header, history_seq));
    if (!dequeued) return absl::OkStatus();  // canceled meanwhile
    remaining = header.pending_deliveries();
    return txn.Put(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id), EncodeRecord(header));
  }));
  return remaining;
}

absl::StatusOr<A2ATasks::Change> A2ADeliveryQueue::DeliveryFailed(absl::string_view task_id,
                                                                  int64_t history_seq,
                                                                  const DeliveryFailure& failure) {
  A2ATasks::Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = A2ATasks::Change();
    ASSIGN_OR_RETURN(v1::StoredTask header, a2a_records::LockTask(txn, task_id));
    const std::string key = keys::A2ADelivery(task_id, static_cast<uint64_t>(history_seq));
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(raw.status())) {
      change.header = std::move(header);
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(raw.status());
    v1::PendingDelivery delivery;
    RETURN_IF_ERROR(DecodeRecord(*raw, &delivery));
    if (failure.reached) {
      delivery.set_attempts(delivery.attempts() + 1);
      delivery.set_unreached(0);
    } else {
      delivery.set_unreached(delivery.unreached() + 1);
    }
    delivery.set_last_error(failure.error);
    *delivery.mutable_next_attempt_time() = ToProtoTime(failure.next_attempt);
    if (!failure.give_up.has_value()) {
      change.header = std::move(header);
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(delivery));
    }
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    RETURN_IF_ERROR(Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, header.tenant(), task_id, -1));
    header.set_pending_deliveries(std::max<int64_t>(header.pending_deliveries() - 1, 0));
    const std::string old_index_key = a2a_records::TaskIndexKey(header);
    if (!IsTerminal(header.task().status().state())) {
      header.set_version(header.version() + 1);
      a2apb::TaskStatus failed;
      failed.set_state(a2apb::TASK_STATE_FAILED);
      a2apb::Message* reason = failed.mutable_message();
      reason->set_role(a2apb::ROLE_AGENT);
      reason->add_parts()->set_text(*failure.give_up);
      RETURN_IF_ERROR(a2a_records::SetStatus(txn, header, failed, &change));
      *header.mutable_update_time() = ToProtoTime(absl::Now());
    }
    RETURN_IF_ERROR(a2a_records::PutTask(txn, header, old_index_key));
    change.header = std::move(header);
    return absl::OkStatus();
  }));
  a2a_records::PublishChange(notifier_, change);
  return change;
}

absl::Status A2ADeliveryQueue::RetryDeliveriesNow(absl::string_view tenant) {
  ASSIGN_OR_RETURN(std::vector<v1::PendingDelivery> pending, PendingDeliveries(100000));
  const auto now = ToProtoTime(absl::Now());
  for (const v1::PendingDelivery& d : pending) {
    if (d.tenant() != tenant) continue;
    RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
      const std::string key =
          keys::A2ADelivery(d.task_id(), static_cast<uint64_t>(d.history_seq()));
      absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
      if (absl::IsNotFound(raw.status())) return absl::OkStatus();
      RETURN_IF_ERROR(raw.status());
      v1::PendingDelivery current;
      RETURN_IF_ERROR(DecodeRecord(*raw, &current));
      *current.mutable_next_attempt_time() = now;
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(current));
    }));
  }
  return absl::OkStatus();
}

}  // namespace coordinator
