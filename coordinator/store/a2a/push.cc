#include "coordinator/store/a2a/push.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/uuid.h"
#include "common/validation.h"
#include "coordinator/store/a2a/records.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "storage/key_codec.h"

namespace coordinator {

using storage::ColumnFamily;
using storage::Transaction;

namespace {

constexpr int kDefaultConfigPageSize = 50;
constexpr int kMaxConfigPageSize = 100;

}  // namespace

namespace a2a_records {

std::string EncodePushConfig(const a2apb::TaskPushNotificationConfig& config,
                             absl::string_view protocol_version) {
  v1::StoredPushConfig stored;
  *stored.mutable_config() = config;
  if (protocol_version != kPushVersion10)
    stored.set_protocol_version(std::string(protocol_version));
  return EncodeRecord(stored);
}

absl::Status DecodePushConfig(absl::string_view raw, v1::StoredPushConfig* stored) {
  RETURN_IF_ERROR(DecodeRecord(raw, stored));
  if (stored->has_config()) return absl::OkStatus();
  // Stored before StoredPushConfig: the bare config, created over 1.0.
  stored->Clear();
  return DecodeRecord(raw, stored->mutable_config());
}

absl::Status PutPushConfig(Transaction& txn, v1::StoredTask& header,
                           const a2apb::TaskPushNotificationConfig& config,
                           absl::string_view protocol_version) {
  const std::string key = keys::A2APushConfig(config.task_id(), config.id());
  if (header.has_push_config_count()) {
    absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(existing.status())) {
      header.set_push_config_count(header.push_config_count() + 1);
    } else {
      RETURN_IF_ERROR(existing.status());
    }
  }
  return txn.Put(ColumnFamily::kA2A, key, EncodePushConfig(config, protocol_version));
}

absl::StatusOr<bool> QueuePushCalls(Transaction& txn, v1::StoredTask& header,
                                    const v1::StoredEvent& event) {
  if (header.has_push_config_count() && header.push_config_count() == 0) return false;
  const std::string& task_id = header.task().id();
  bool queued = false;
  int64_t configs = 0;
  const std::string prefix = keys::A2ATaskKindPrefix(task_id, keys::kA2ATaskPushConfig);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    ++configs;
    v1::StoredPushConfig stored;
    RETURN_IF_ERROR(DecodePushConfig(it->value(), &stored));
    v1::PushDelivery push;
    *push.mutable_config() = std::move(*stored.mutable_config());
    push.set_protocol_version(stored.protocol_version());
    push.set_seq(static_cast<uint64_t>(event.seq()));
    push.set_task_id(task_id);
    push.set_config_id(push.config().id());
    if (stored.protocol_version() == kPushVersion03) {
      *push.mutable_payload()->mutable_task() = header.task();  // the header holds no history
    } else {
      *push.mutable_payload() = event.event();
    }
    push.set_state(v1::PUSH_STATE_PENDING);
    *push.mutable_next_attempt_time() = event.time();
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kA2A,
                            keys::A2APushPending(task_id, push.seq(), push.config_id()),
                            EncodeRecord(push)));
    queued = true;
  }
  RETURN_IF_ERROR(it->status());
  header.set_push_config_count(configs);
  return queued;
}

}  // namespace a2a_records

absl::StatusOr<a2apb::TaskPushNotificationConfig> A2APush::CreatePushConfig(
    const a2apb::TaskPushNotificationConfig& request, absl::string_view protocol_version) {
  RETURN_IF_ERROR(ValidatePushVersion(protocol_version));
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  RETURN_IF_ERROR(ValidatePushConfig(request, limits_, options_));
  a2apb::TaskPushNotificationConfig config = request;
  if (config.id().empty()) config.set_id(common::NewUuid());
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, a2a_records::LockTask(txn, config.task_id()));
    RETURN_IF_ERROR(a2a_records::OwnedBy(header, request.tenant()));
    config.set_tenant(header.tenant());
    const std::string prefix = keys::A2ATaskKindPrefix(config.task_id(), keys::kA2ATaskPushConfig);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
    int count = 0;
    bool replacing = false;
    for (; it->Valid(); it->Next()) {
      ++count;
      if (it->key() == keys::A2APushConfig(config.task_id(), config.id())) replacing = true;
    }
    RETURN_IF_ERROR(it->status());
    if (!replacing && count >= options_.max_push_configs_per_task) {
      return absl::ResourceExhaustedError(absl::StrCat("task ", config.task_id(), " already has ",
                                                       count, " push configs; the limit is ",
                                                       options_.max_push_configs_per_task));
    }
    header.set_push_config_count(replacing ? count : count + 1);
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kA2A, keys::A2APushConfig(config.task_id(), config.id()),
                            a2a_records::EncodePushConfig(config, protocol_version)));
    return a2a_records::PutTaskHeader(txn, header);
  }));
  return config;
}

absl::StatusOr<a2apb::TaskPushNotificationConfig> A2APush::GetPushConfig(absl::string_view tenant,
                                                                         absl::string_view task_id,
                                                                         absl::string_view id) {
  RETURN_IF_ERROR(a2a_records::ReadTask(store_, tenant, task_id).status());
  RETURN_IF_ERROR(common::ValidateId("id", id));
  absl::StatusOr<std::string> raw =
      store_->Get(ColumnFamily::kA2A, keys::A2APushConfig(task_id, id));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(
        absl::StrCat("push config ", id, " of task ", task_id, " not found"));
  }
  RETURN_IF_ERROR(raw.status());
  v1::StoredPushConfig stored;
  RETURN_IF_ERROR(a2a_records::DecodePushConfig(*raw, &stored));
  return std::move(*stored.mutable_config());
}

absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> A2APush::ListPushConfigs(
    const a2apb::ListTaskPushNotificationConfigsRequest& request) {
  RETURN_IF_ERROR(a2a_records::ReadTask(store_, request.tenant(), request.task_id()).status());
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultConfigPageSize,
                                                        kMaxConfigPageSize));
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "a2a_push_configs", request.task_id()));
  const std::string prefix = keys::A2ATaskKindPrefix(request.task_id(), keys::kA2ATaskPushConfig);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(keys::A2APushConfig(request.task_id(), resume));
  a2apb::ListTaskPushNotificationConfigsResponse response;
  for (; it->Valid(); it->Next()) {
    v1::StoredPushConfig stored;
    RETURN_IF_ERROR(a2a_records::DecodePushConfig(it->value(), &stored));
    if (response.configs_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("a2a_push_configs", request.task_id(), stored.config().id()));
      break;
    }
    *response.add_configs() = std::move(*stored.mutable_config());
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::Status A2APush::DeletePushConfig(absl::string_view tenant, absl::string_view task_id,
                                       absl::string_view id) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  RETURN_IF_ERROR(common::ValidateId("id", id));
  return store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, a2a_records::LockTask(txn, task_id));
    RETURN_IF_ERROR(a2a_records::OwnedBy(header, tenant));
    const std::string key = keys::A2APushConfig(task_id, id);
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    // Idempotent (A2A 3.1.10): a config that is gone, or never was, is deleted already.
    if (absl::IsNotFound(raw.status())) return absl::OkStatus();
    RETURN_IF_ERROR(raw.status());
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    if (!header.has_push_config_count()) return absl::OkStatus();  // counted at its next change
    header.set_push_config_count(std::max<int64_t>(header.push_config_count() - 1, 0));
    return a2a_records::PutTaskHeader(txn, header);
  });
}

absl::StatusOr<std::vector<v1::PushDelivery>> A2APush::PendingPushes(int max) {
  const std::string prefix = keys::A2APushPendingPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PushDelivery> out;
  for (; it->Valid() && static_cast<int>(out.size()) < max; it->Next()) {
    v1::PushDelivery push;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &push));
    out.push_back(std::move(push));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<common::HttpUrl> A2APush::AllowedWebhookUrl(absl::string_view url) const {
  return CheckWebhookUrl(url, options_);
}

absl::Status A2APush::RecordPushAttempt(const v1::PushDelivery& push,
                                        const v1::PushAttempt& attempt, bool delivered,
                                        bool give_up) {
  return store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    const std::string key = keys::A2APushPending(push.task_id(), push.seq(), push.config_id());
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(raw.status())) return absl::OkStatus();
    RETURN_IF_ERROR(raw.status());
    v1::PushDelivery current;
    RETURN_IF_ERROR(DecodeRecord(*raw, &current));
    *current.add_attempts() = attempt;
    const int attempts = current.attempts_size();
    if (!delivered && !give_up && attempts < options_.push_max_attempts) {
      absl::Duration backoff = options_.push_initial_backoff;
      for (int i = 1; i < attempts && backoff < options_.push_max_backoff; ++i) backoff *= 2;
      backoff = std::min(backoff, options_.push_max_backoff);
      *current.mutable_next_attempt_time() = ToProtoTime(absl::Now() + backoff);
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(current));
    }
    current.set_state(delivered ? v1::PUSH_STATE_DELIVERED : v1::PUSH_STATE_FAILED);
    current.clear_next_attempt_time();
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    return txn.Put(ColumnFamily::kA2A,
                   keys::A2APushLog(push.task_id(), push.seq(), push.config_id()),
                   EncodeRecord(current));
  });
}

absl::StatusOr<std::vector<v1::PushDelivery>> A2APush::PushLog(absl::string_view task_id) {
  const std::string prefix = keys::A2ATaskKindPrefix(task_id, keys::kA2ATaskPushLog);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PushDelivery> out;
  for (; it->Valid(); it->Next()) {
    v1::PushDelivery push;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &push));
    out.push_back(std::move(push));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

}  // namespace coordinator
