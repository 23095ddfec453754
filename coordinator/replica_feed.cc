#include "coordinator/replica_feed.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;

// The record type and the id that follows it (a context, retry task, A2A task, run or agent),
// and the byte after the id when there is one (0 when the key ends there).
struct KeyHead {
  uint8_t type = 0;
  std::string id;
  uint8_t record = 0;
  bool has_record = false;
};

std::optional<KeyHead> ReadHead(absl::string_view key) {
  storage::KeyReader reader(key);
  absl::StatusOr<uint8_t> type = reader.ReadByte();
  if (!type.ok()) return std::nullopt;
  KeyHead head;
  head.type = *type;
  // Keys without an id after their type (the breaker log, tallies): only the type matters.
  switch (head.type) {
    case keys::kContextScoped:
    case keys::kTaskScoped:
    case keys::kBlockedRegistry:
    case keys::kWorkRunScoped:
    case keys::kA2AAgent:
    case keys::kA2ATaskScoped:
    case keys::kA2ADelivery:
    case keys::kA2APushPending:
      break;
    default:
      return head;
  }
  absl::StatusOr<std::string> id = reader.ReadString();
  if (!id.ok()) return std::nullopt;
  head.id = *std::move(id);
  absl::StatusOr<uint8_t> record = reader.ReadByte();
  if (record.ok()) {
    head.record = *record;
    head.has_record = true;
  }
  return head;
}

// What one commit asks to tell, each listener once per record.
struct Told {
  absl::btree_set<std::string> a2a_tasks;  // event logs appended
  bool deliveries = false;
  bool pushes = false;
  absl::btree_set<std::pair<std::string, std::string>> console;  // (kind, id)
  // Per run: its items as written, and its header when the commit wrote it.
  struct RunChange {
    std::vector<v1::WorkItem> items;
    std::optional<v1::Run> run;
  };
  absl::btree_map<std::string, RunChange> runs;
};

void Collect(const storage::EtcdChange& change, Told* told) {
  const std::optional<KeyHead> head = ReadHead(change.key);
  if (!head.has_value()) {
    LOG_WARN("replica feed: a key of family %s does not parse; ignored",
             storage::ColumnFamilyName(change.cf));
    return;
  }
  switch (change.cf) {
    case ColumnFamily::kA2A:
      if (head->type == keys::kA2ATaskScoped && head->record == keys::kA2ATaskEvent &&
          change.value.has_value()) {
        told->a2a_tasks.insert(head->id);
      } else if (head->type == keys::kA2ADelivery) {
        told->deliveries = true;
      } else if (head->type == keys::kA2APushPending && change.value.has_value()) {
        told->pushes = true;
      } else if (head->type == keys::kA2AAgent) {
        told->console.insert({"agent", head->id});
      }
      return;
    case ColumnFamily::kContexts:
      if (head->type != keys::kContextScoped) return;
      if (head->record == keys::kConversationMeta || head->record == keys::kConversationMessage ||
          head->record == keys::kMessageRequest) {
        told->console.insert({"conversation", head->id});
      } else {
        told->console.insert({"context", head->id});
      }
      return;
    case ColumnFamily::kTasks:
      if (head->type == keys::kTaskScoped || head->type == keys::kBlockedRegistry) {
        told->console.insert({"retry", head->id});
      }
      return;
    case ColumnFamily::kWork: {
      if (head->type != keys::kWorkRunScoped) return;
      Told::RunChange& run = told->runs[head->id];
      if (!change.value.has_value()) return;
      if (head->record == keys::kRunItem) {
        v1::WorkItem item;
        if (absl::Status s = DecodeRecord(*change.value, &item); !s.ok()) {
          LOG_WARN("replica feed: an item of run %s: %s", head->id, s.message());
          return;
        }
        run.items.push_back(std::move(item));
      } else if (head->record == keys::kRunHeader) {
        v1::WorkRunRecord record;
        if (absl::Status s = DecodeRecord(*change.value, &record); !s.ok()) {
          LOG_WARN("replica feed: the header of run %s: %s", head->id, s.message());
          return;
        }
        run.run = std::move(*record.mutable_run());
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaFeed>> ReplicaFeed::Start(storage::EtcdStore* store,
                                                                ReplicaFeedListeners listeners) {
  auto feed = std::make_unique<ReplicaFeed>(
      listeners, [store](int64_t revision) { return store->WroteRevision(revision); });
  ReplicaFeed* raw = feed.get();
  ASSIGN_OR_RETURN(
      feed->watch_,
      storage::EtcdWatch::Start(
          store->options(),
          {ColumnFamily::kContexts, ColumnFamily::kTasks, ColumnFamily::kA2A, ColumnFamily::kWork},
          /*after_revision=*/0,
          [raw](const std::vector<storage::EtcdChange>& changes) { raw->Apply(changes); },
          [raw](int64_t compacted) { raw->Gap(compacted); }));
  return feed;
}

ReplicaFeed::ReplicaFeed(ReplicaFeedListeners listeners, std::function<bool(int64_t)> own)
    : listeners_(listeners), own_(std::move(own)) {}

ReplicaFeed::~ReplicaFeed() { watch_.reset(); }

void ReplicaFeed::Apply(const std::vector<storage::EtcdChange>& changes) {
  if (changes.empty()) return;
  if (own_ != nullptr && own_(changes.front().revision)) {
    skipped_own_.fetch_add(1);
    return;
  }
  applied_.fetch_add(1);
  Told told;
  for (const storage::EtcdChange& change : changes) Collect(change, &told);
  // The work first: a WatchRun stream and the console learn of an item in the order its
  // replica committed it.
  if (listeners_.work != nullptr) {
    for (auto& [run_id, change] : told.runs) {
      if (change.items.empty()) {
        // The header, the workers or the log only: the run's watchers of every run (the
        // console) hear of it; a run's own watchers follow items, and get none.
        v1::RunEvent event;
        event.set_type(v1::RunEvent::TYPE_CHANGED);
        event.set_run_id(run_id);
        if (change.run.has_value()) *event.mutable_run() = *change.run;
        listeners_.work->Publish(event);
        continue;
      }
      for (v1::WorkItem& item : change.items) {
        v1::RunEvent event;
        event.set_type(v1::RunEvent::TYPE_CHANGED);
        event.set_run_id(run_id);
        *event.mutable_item() = std::move(item);
        if (change.run.has_value()) *event.mutable_run() = *change.run;
        listeners_.work->Publish(event);
      }
    }
  }
  if (listeners_.a2a != nullptr) {
    for (const std::string& task_id : told.a2a_tasks) listeners_.a2a->Notify(task_id);
    if (told.pushes) listeners_.a2a->PushesQueued();
  }
  if (told.deliveries && listeners_.gateway != nullptr) listeners_.gateway->Kick();
  if (listeners_.console != nullptr) {
    for (const auto& [kind, id] : told.console) listeners_.console->Publish(kind, id);
  }
}

void ReplicaFeed::Gap(int64_t compacted_revision) {
  LOG_WARN(
      "replica feed: the etcd cluster compacted revisions up to %d before this replica heard "
      "them; every stream and waiting call reads the state again",
      compacted_revision);
  if (listeners_.work != nullptr) {
    listeners_.work->EndWatches(absl::UnavailableError(absl::StrCat(
        "this replica missed changes other replicas made (the etcd cluster compacted revisions "
        "up to ",
        compacted_revision, "); watch the run again for a fresh snapshot")));
  }
  if (listeners_.a2a != nullptr) {
    listeners_.a2a->NotifyAll();
    listeners_.a2a->PushesQueued();
  }
  if (listeners_.gateway != nullptr) listeners_.gateway->Kick();
  if (listeners_.console != nullptr) listeners_.console->Resync();
}

}  // namespace coordinator
