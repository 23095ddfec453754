#include "coordinator/store/contexts/conversation_store.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/contexts/context_access.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/v1/stored.pb.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;

constexpr int kDefaultMessagePageSize = 100;

absl::StatusOr<std::optional<v1::ConversationMeta>> DecodeMeta(
    const absl::StatusOr<std::string>& raw) {
  if (absl::IsNotFound(raw.status())) return std::nullopt;
  RETURN_IF_ERROR(raw.status());
  v1::ConversationMeta meta;
  RETURN_IF_ERROR(DecodeRecord(*raw, &meta));
  return meta;
}

// The agent's steps in the conversation `meta` heads. A meta written before steps were kept
// has none: they are counted from the messages, as `source` (the store or a transaction) sees
// them, up to the meta's last one.
template <typename Source>
absl::StatusOr<int64_t> StepCount(const v1::ConversationMeta& meta, Source& source,
                                  absl::string_view context_id) {
  if (meta.has_step_count() || meta.message_count() == 0) return meta.step_count();
  const std::string prefix = keys::ConversationPrefix(context_id);
  std::unique_ptr<storage::Iterator> it =
      source.NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
  int64_t steps = 0;
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    v1::ConversationMessage message;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &message));
    if (message.seq() > meta.message_count()) break;
    if (message.role() == v1::ROLE_AGENT) ++steps;
  }
  RETURN_IF_ERROR(it->status());
  return steps;
}

}  // namespace

absl::StatusOr<v1::AppendMessageResponse> ConversationStore::Append(
    const v1::AppendMessageRequest& request, const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("context_id", request.context_id()));
  if (request.role() == v1::ROLE_UNSPECIFIED || !v1::Role_IsValid(request.role())) {
    return absl::InvalidArgumentError(
        absl::StrCat("role ", request.role(), " is not one of USER, AGENT, SYSTEM"));
  }
  if (request.tokens() < 0) return absl::InvalidArgumentError("tokens must not be negative");
  RETURN_IF_ERROR(
      common::ValidateSize("text", request.text(), limits_.max_message_bytes, "max_message_bytes"));
  RETURN_IF_ERROR(common::ValidateOptionalId("request_id", request.request_id()));

  v1::AppendMessageResponse response;
  bool replayed = false;
  RETURN_IF_ERROR(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    replayed = false;
    if (access.scoped) {
      ASSIGN_OR_RETURN(const v1::TaskContext context, LockContextHeader(txn, request.context_id()));
      RETURN_IF_ERROR(CheckConversationWrite(access, context));
    }
    const std::string meta_key = keys::ConversationMeta(request.context_id());
    v1::ConversationMeta meta;
    const auto now = ToProtoTime(absl::Now());
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kContexts, meta_key);
    if (raw.ok()) {
      RETURN_IF_ERROR(DecodeRecord(*raw, &meta));
    } else if (absl::IsNotFound(raw.status())) {
      *meta.mutable_create_time() = now;
    } else {
      return raw.status();
    }
    ASSIGN_OR_RETURN(const int64_t steps, StepCount(meta, txn, request.context_id()));
    // A retry of a message already appended (the meta lock orders it after the original).
    const std::string request_key =
        request.request_id().empty()
            ? ""
            : keys::MessageRequest(request.context_id(), request.request_id());
    if (!request_key.empty()) {
      ASSIGN_OR_RETURN(std::optional<int64_t> seen, ReadRequestSeq(txn, request_key));
      if (seen.has_value()) {
        ASSIGN_OR_RETURN(const std::string stored,
                         txn.GetForUpdate(ColumnFamily::kContexts,
                                          keys::ConversationMessage(request.context_id(), *seen)));
        v1::ConversationMessage message;
        RETURN_IF_ERROR(DecodeRecord(stored, &message));
        if (message.text() != request.text() || message.role() != request.role()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "request_id ", request.request_id(), " already appended message ", message.seq(),
              " of context ", request.context_id(), ", which is another message"));
        }
        response.set_step_count(steps);
        response.set_message_count(meta.message_count());
        response.set_total_tokens(meta.total_tokens());
        *response.mutable_message() = std::move(message);
        replayed = true;
        return absl::OkStatus();
      }
    }
    v1::ConversationMessage message;
    message.set_seq(meta.message_count() + 1);
    message.set_role(request.role());
    message.set_text(request.text());
    message.set_tokens(request.tokens());
    *message.mutable_time() = now;
    meta.set_message_count(message.seq());
    meta.set_step_count(steps + (request.role() == v1::ROLE_AGENT ? 1 : 0));
    meta.set_total_tokens(meta.total_tokens() + request.tokens());
    *meta.mutable_update_time() = now;
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kContexts,
                            keys::ConversationMessage(request.context_id(), message.seq()),
                            EncodeRecord(message)));
    if (!request_key.empty()) {
      RETURN_IF_ERROR(
          txn.Put(ColumnFamily::kContexts, request_key, EncodeRequestSeq(message.seq())));
    }
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kContexts, meta_key, EncodeRecord(meta)));
    response.set_step_count(meta.step_count());
    response.set_message_count(meta.message_count());
    response.set_total_tokens(meta.total_tokens());
    *response.mutable_message() = std::move(message);
    return absl::OkStatus();
  }));
  if (on_change_ && !replayed) on_change_(request.context_id());
  return response;
}

absl::StatusOr<v1::GetConversationResponse> ConversationStore::Read(
    const v1::GetConversationRequest& request) {
  RETURN_IF_ERROR(common::ValidateId("context_id", request.context_id()));
  if (request.tail() < 0) return absl::InvalidArgumentError("tail must not be negative");
  ASSIGN_OR_RETURN(
      const int page_size,
      ResolvePageSize(request.page_size(), kDefaultMessagePageSize, limits_.max_page_size));
  const std::string filter = absl::StrCat(request.context_id(), ":", request.tail());
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "conversation", filter));

  absl::StatusOr<std::string> raw =
      store_->Get(ColumnFamily::kContexts, keys::ConversationMeta(request.context_id()));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(
        absl::StrCat("context ", request.context_id(), " has no conversation"));
  }
  RETURN_IF_ERROR(raw.status());
  v1::ConversationMeta meta;
  RETURN_IF_ERROR(DecodeRecord(*raw, &meta));

  // Messages are keyed by seq (big-endian), so the tail starts with one seek.
  const std::string prefix = keys::ConversationPrefix(request.context_id());
  std::string start;
  if (!resume.empty()) {
    start = absl::StrCat(prefix, resume);
  } else {
    const int64_t first =
        request.tail() > 0 ? std::max<int64_t>(1, meta.message_count() - request.tail() + 1) : 1;
    start = keys::ConversationMessage(request.context_id(), static_cast<uint64_t>(first));
  }
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
  it->Seek(start);

  v1::GetConversationResponse response;
  ASSIGN_OR_RETURN(const int64_t steps, StepCount(meta, *store_, request.context_id()));
  response.set_step_count(steps);
  response.set_message_count(meta.message_count());
  response.set_total_tokens(meta.total_tokens());
  size_t page_bytes = 0;
  for (; it->Valid(); it->Next()) {
    v1::ConversationMessage message;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &message));
    // Stop at the totals read above, so a concurrent append does not make them disagree.
    if (message.seq() > meta.message_count()) break;
    const size_t size = message.ByteSizeLong();
    if (response.messages_size() == page_size ||
        (response.messages_size() > 0 && page_bytes + size > kMaxPageBytes)) {
      response.set_next_page_token(
          EncodePageToken("conversation", filter, it->key().substr(prefix.size())));
      break;
    }
    page_bytes += size;
    *response.add_messages() = std::move(message);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<std::optional<v1::ConversationMeta>> ConversationStore::ReadMeta(
    storage::Store& store, absl::string_view context_id) {
  return DecodeMeta(store.Get(ColumnFamily::kContexts, keys::ConversationMeta(context_id)));
}

absl::StatusOr<std::optional<v1::ConversationMeta>> ConversationStore::LockMeta(
    storage::Transaction& txn, absl::string_view context_id) {
  return DecodeMeta(txn.GetForUpdate(ColumnFamily::kContexts, keys::ConversationMeta(context_id)));
}

absl::StatusOr<bool> ConversationStore::PurgeMessages(storage::Transaction& txn,
                                                      absl::string_view context_id, int64_t limit,
                                                      int64_t* deleted) {
  ASSIGN_OR_RETURN(const bool done,
                   DeletePrefix(txn, ColumnFamily::kContexts, keys::ConversationPrefix(context_id),
                                limit, deleted));
  if (!done) return false;
  return DeletePrefix(txn, ColumnFamily::kContexts, keys::MessageRequestPrefix(context_id), limit,
                      deleted);
}

absl::Status ConversationStore::DeleteMeta(storage::Transaction& txn,
                                           absl::string_view context_id) {
  return txn.Delete(ColumnFamily::kContexts, keys::ConversationMeta(context_id));
}

absl::StatusOr<int64_t> ConversationStore::CountRecords(storage::Store& store,
                                                        absl::string_view context_id) {
  ASSIGN_OR_RETURN(std::optional<v1::ConversationMeta> meta, ReadMeta(store, context_id));
  ASSIGN_OR_RETURN(int64_t messages, CountPrefix(store, ColumnFamily::kContexts,
                                                 keys::ConversationPrefix(context_id)));
  ASSIGN_OR_RETURN(int64_t requests, CountPrefix(store, ColumnFamily::kContexts,
                                                 keys::MessageRequestPrefix(context_id)));
  return messages + requests + (meta.has_value() ? 1 : 0);
}

}  // namespace coordinator
