// Every record type has an owner, and each owner's purge deletes every record it writes under
// one entity. The tables below name the owner of each record-type byte; the checks fail when an
// enum value of keys.h is missing from them, when a byte value moves, and when a record of some
// kind is written under a context, an A2A task, a run or a retry task (through the real stores)
// but is still there after its owner's purge.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/a2a/push.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/retry/breaker.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/store/work/work_store.h"
#include "gtest/gtest.h"
#include "storage/key_codec.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using keys::A2ATaskRecord;
using keys::ContextRecord;
using keys::RecordType;
using keys::RunRecord;
using keys::TaskRecord;
using storage::ColumnFamily;
using ::testing_util::TempDir;

namespace a2apb = ::lf::a2a::v1;

// Who deletes a record type.
enum class Owner {
  kContext,    // ContextStore::PurgeStep (and ContextStore::Delete)
  kA2ATask,    // PurgeA2ATaskStep
  kRun,        // WorkStore::PurgeStep
  kRetryTask,  // TaskStateStore::TxnRemoveTask (CleanupTask, breaker cleanup)
  kShared,     // records of no single entity: no purge deletes them
};

struct TypeOwner {
  RecordType type;
  Owner owner;
  uint8_t byte;  // its value on disk, pinned
};

// One row per RecordType. A new record type must be added here (EveryRecordTypeHasAnOwner).
constexpr TypeOwner kTypeOwners[] = {
    {RecordType::kContextScoped, Owner::kContext, 0x10},
    {RecordType::kContextsByAgent, Owner::kContext, 0x20},
    {RecordType::kContextsByTime, Owner::kContext, 0x21},
    {RecordType::kTaskScoped, Owner::kRetryTask, 0x30},
    {RecordType::kBlockedRegistry, Owner::kRetryTask, 0x31},
    {RecordType::kBreakerLogMeta, Owner::kShared, 0x32},  // the log's newest seq
    {RecordType::kBreakerLog, Owner::kShared, 0x33},      // an append-only audit log
    {RecordType::kWorkRunScoped, Owner::kRun, 0x40},
    {RecordType::kWorkLeases, Owner::kRun, 0x41},
    {RecordType::kA2AAgent, Owner::kShared, 0x50},  // the agent registry
    {RecordType::kA2ATaskScoped, Owner::kA2ATask, 0x51},
    {RecordType::kA2ATasksByTime, Owner::kA2ATask, 0x52},
    {RecordType::kA2ADelivery, Owner::kA2ATask, 0x53},
    {RecordType::kA2APushPending, Owner::kA2ATask, 0x54},
    {RecordType::kTally, Owner::kShared, 0x60},         // derived totals over every entity
    {RecordType::kDerivedBuilt, Owner::kShared, 0x61},  // which derived records are built
};

// The sub-type bytes under an entity's prefix, pinned.
constexpr std::pair<ContextRecord, uint8_t> kContextBytes[] = {
    {ContextRecord::kHeader, 0x00},           {ContextRecord::kCommand, 0x01},
    {ContextRecord::kConversationMeta, 0x02}, {ContextRecord::kConversationMessage, 0x03},
    {ContextRecord::kCommandRequest, 0x04},   {ContextRecord::kMessageRequest, 0x05}};
constexpr std::pair<TaskRecord, uint8_t> kTaskBytes[] = {{TaskRecord::kHeader, 0x00},
                                                         {TaskRecord::kFailure, 0x01},
                                                         {TaskRecord::kEscalation, 0x02},
                                                         {TaskRecord::kQualityGate, 0x03},
                                                         {TaskRecord::kBreakSummary, 0x04}};
constexpr std::pair<RunRecord, uint8_t> kRunBytes[] = {{RunRecord::kHeader, 0x00},
                                                       {RunRecord::kItem, 0x01},
                                                       {RunRecord::kPending, 0x02},
                                                       {RunRecord::kEvent, 0x03},
                                                       {RunRecord::kWorker, 0x04}};
constexpr std::pair<A2ATaskRecord, uint8_t> kA2ATaskBytes[] = {{A2ATaskRecord::kHeader, 0x00},
                                                               {A2ATaskRecord::kHistory, 0x01},
                                                               {A2ATaskRecord::kEvent, 0x02},
                                                               {A2ATaskRecord::kPushConfig, 0x03},
                                                               {A2ATaskRecord::kPushLog, 0x04}};

template <typename Enum, size_t N>
bool Listed(const Enum (&all)[N], Enum value) {
  for (Enum e : all) {
    if (e == value) return true;
  }
  return false;
}

// Every byte that Name() knows is in the enum's kAll array and in the pinned table with its
// byte, and nothing else is: an enumerator added to keys.h without the array or the table
// fails here (and one left out of Name() fails the build).
template <typename Enum, size_t N, size_t M>
void ExpectComplete(const Enum (&all)[N], const std::pair<Enum, uint8_t> (&pinned)[M]) {
  size_t named = 0;
  for (int b = 0; b < 256; ++b) {
    const Enum value = static_cast<Enum>(b);
    const bool has_name = !keys::Name(value).empty();
    if (has_name) ++named;
    EXPECT_EQ(has_name, Listed(all, value)) << "byte " << b;
    int rows = 0;
    for (const auto& [e, byte] : pinned) {
      if (e == value) {
        ++rows;
        EXPECT_EQ(byte, b) << keys::Name(value) << " moved: the byte is on disk";
      }
    }
    EXPECT_EQ(rows, has_name ? 1 : 0) << "byte " << b << " " << keys::Name(value);
  }
  EXPECT_EQ(named, N);
}

TEST(RecordTypeTest, EveryRecordTypeHasAnOwner) {
  size_t named = 0;
  for (int b = 0; b < 256; ++b) {
    const RecordType type = static_cast<RecordType>(b);
    const bool has_name = !keys::Name(type).empty();
    if (has_name) ++named;
    EXPECT_EQ(has_name, Listed(keys::kAllRecordTypes, type)) << "byte " << b;
    int rows = 0;
    for (const TypeOwner& row : kTypeOwners) {
      if (row.type == type) {
        ++rows;
        EXPECT_EQ(row.byte, b) << keys::Name(type) << " moved: the byte is on disk";
      }
    }
    EXPECT_EQ(rows, has_name ? 1 : 0) << "record type " << b << " " << keys::Name(type)
                                      << " needs exactly one row in kTypeOwners";
  }
  EXPECT_EQ(named, std::size(keys::kAllRecordTypes));
}

TEST(RecordTypeTest, EverySubTypeIsListedAndPinned) {
  ExpectComplete(keys::kAllContextRecords, kContextBytes);
  ExpectComplete(keys::kAllTaskRecords, kTaskBytes);
  ExpectComplete(keys::kAllRunRecords, kRunBytes);
  ExpectComplete(keys::kAllA2ATaskRecords, kA2ATaskBytes);
}

TEST(RecordTypeTest, ScanPrefixesAreTheTypeByte) {
  for (RecordType type : keys::kAllRecordTypes) {
    const std::string prefix = keys::TypePrefix(type);
    ASSERT_EQ(prefix.size(), 1u);
    EXPECT_EQ(static_cast<uint8_t>(prefix[0]), keys::Byte(type));
  }
  EXPECT_EQ(keys::AllContextsPrefix(), keys::TypePrefix(RecordType::kContextScoped));
  EXPECT_EQ(keys::A2ATasksByTimePrefix(), keys::TypePrefix(RecordType::kA2ATasksByTime));
  // Newest first: a later status time sorts earlier; a time before the epoch is the epoch.
  EXPECT_LT(keys::A2ATaskByStatusTime(2000, "t"), keys::A2ATaskByStatusTime(1000, "t"));
  EXPECT_EQ(keys::A2ATaskByStatusTime(-5, "t"), keys::A2ATaskByStatusTime(0, "t"));
  EXPECT_EQ(keys::A2AStatusMicros(keys::A2AInvertedMicros(123456)), 123456);
  // Each entity's key sits under its prefix.
  EXPECT_EQ(keys::ContextHeader("c").rfind(keys::ContextPrefix("c"), 0), 0u);
  EXPECT_EQ(keys::RunPending("r", 3, "i").rfind(keys::RunPendingPrefix("r"), 0), 0u);
  EXPECT_EQ(keys::A2APushPending("t", 1, "c").rfind(keys::A2APushPendingTaskPrefix("t"), 0), 0u);
}

// The kind of a key: its record type and, under an entity's prefix, the sub-type byte (-1
// otherwise).
using Kind = std::pair<int, int>;

std::set<Kind> ExpectedKinds(Owner owner) {
  std::set<Kind> out;
  for (const TypeOwner& row : kTypeOwners) {
    if (row.owner != owner) continue;
    const int type = row.byte;
    switch (row.type) {
      case RecordType::kContextScoped:
        for (ContextRecord r : keys::kAllContextRecords) out.insert({type, keys::Byte(r)});
        break;
      case RecordType::kTaskScoped:
        for (TaskRecord r : keys::kAllTaskRecords) out.insert({type, keys::Byte(r)});
        break;
      case RecordType::kWorkRunScoped:
        for (RunRecord r : keys::kAllRunRecords) out.insert({type, keys::Byte(r)});
        break;
      case RecordType::kA2ATaskScoped:
        for (A2ATaskRecord r : keys::kAllA2ATaskRecords) out.insert({type, keys::Byte(r)});
        break;
      default:
        out.insert({type, -1});
    }
  }
  return out;
}

bool IsScoped(uint8_t type) {
  return type == keys::kContextScoped || type == keys::kTaskScoped ||
         type == keys::kWorkRunScoped || type == keys::kA2ATaskScoped;
}

class RecordOwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.path(), /*sync_writes=*/false);
    ASSERT_OK(store);
    store_ = *std::move(store);
  }

  // The kinds of every key, in every column family, that names `id`.
  std::set<Kind> KindsOf(const std::string& id) {
    std::set<Kind> out;
    for (int cf = 0; cf < static_cast<int>(ColumnFamily::kCount); ++cf) {
      std::unique_ptr<storage::Iterator> it =
          store_->NewIterator(static_cast<ColumnFamily>(cf), "", "");
      for (; it->Valid(); it->Next()) {
        const absl::string_view key = it->key();
        if (key.find(id) == absl::string_view::npos) continue;
        const uint8_t type = static_cast<uint8_t>(key[0]);
        int sub = -1;
        if (IsScoped(type)) {
          storage::KeyReader reader(key);
          EXPECT_OK(reader.ReadByte().status());
          EXPECT_OK(reader.ReadString().status());
          absl::StatusOr<uint8_t> byte = reader.ReadByte();
          EXPECT_OK(byte);
          if (byte.ok()) sub = *byte;
        }
        out.insert({type, sub});
      }
      EXPECT_OK(it->status());
    }
    return out;
  }

  // Runs `step` in transactions of at most `limit` keys until the entity is gone. Returns the
  // keys deleted; checks that more than one step was needed (the budget held) and each kept it.
  // The last step deletes the parents and their index entries together, so `limit` must hold
  // them.
  template <typename Step>
  int64_t PurgeInSteps(int64_t limit, Step step) {
    int64_t total = 0;
    int steps = 0;
    while (true) {
      PurgeProgress progress;
      EXPECT_OK(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
        absl::StatusOr<PurgeProgress> p = step(txn, limit);
        if (!p.ok()) return p.status();
        progress = *p;
        return absl::OkStatus();
      }));
      EXPECT_LE(progress.deleted, limit);
      EXPECT_FALSE(progress.kept);
      total += progress.deleted;
      ++steps;
      if (progress.finished) break;
      if (progress.deleted == 0) {
        ADD_FAILURE() << "a step deleted nothing: the parents do not fit in " << limit << " keys";
        break;
      }
    }
    EXPECT_GT(steps, 1);
    return total;
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
};

TEST_F(RecordOwnershipTest, ContextPurgeDeletesEveryKindItWrites) {
  ContextStore contexts(store_.get(), Limits());
  ConversationStore conversations(store_.get(), Limits());
  for (const std::string id : {"owned-ctx", "other-ctx"}) {
    v1::TaskContext context;
    context.set_context_id(id);
    context.set_agent("green");
    ASSERT_OK(contexts.Create(context));
    for (int i = 0; i < 3; ++i) {
      v1::RecordCommandRequest command;
      command.set_context_id(id);
      command.set_command(absl::StrCat("make ", i));
      command.set_request_id(absl::StrCat("command-", i));
      ASSERT_OK(contexts.RecordCommand(command));
      v1::AppendMessageRequest message;
      message.set_context_id(id);
      message.set_role(v1::ROLE_AGENT);
      message.set_text(absl::StrCat("step ", i));
      message.set_request_id(absl::StrCat("message-", i));
      ASSERT_OK(conversations.Append(message));
    }
  }
  ASSERT_EQ(KindsOf("owned-ctx"), ExpectedKinds(Owner::kContext))
      << "write one record of every kind a context holds";
  const std::set<Kind> other = KindsOf("other-ctx");

  absl::StatusOr<int64_t> counted = ContextStore::CountPurge(*store_, "owned-ctx");
  ASSERT_OK(counted);
  auto always = [](const ContextStore::Life&) -> absl::StatusOr<bool> { return true; };
  // Header, its time-index entry, conversation meta and agent-index entry go together.
  const int64_t deleted = PurgeInSteps(4, [&](storage::Transaction& txn, int64_t limit) {
    return ContextStore::PurgeStep(txn, "owned-ctx", limit, always);
  });
  EXPECT_EQ(KindsOf("owned-ctx"), std::set<Kind>());
  EXPECT_EQ(deleted, *counted);
  EXPECT_EQ(KindsOf("other-ctx"), other);
  EXPECT_OK(contexts.Get("other-ctx"));
}

TEST_F(RecordOwnershipTest, A2ATaskPurgeDeletesEveryKindItWrites) {
  A2ATasks tasks(store_.get(), /*notifier=*/nullptr, Limits());
  A2APush push_store(store_.get(), Limits());
  A2ADeliveryQueue deliveries(store_.get(), /*notifier=*/nullptr);
  a2apb::Message message;
  message.set_message_id("m-1");
  message.set_role(a2apb::ROLE_USER);
  message.add_parts()->set_text("hello");
  a2apb::TaskPushNotificationConfig push;
  push.set_url("http://127.0.0.1:9/hook");
  absl::StatusOr<A2ATasks::Change> accepted = tasks.AcceptMessage("ghost", message, &push);
  ASSERT_OK(accepted);
  const std::string id = accepted->header.task().id();
  ASSERT_FALSE(id.empty());
  // Two status changes queue two webhook calls; one is made, which moves it to the push log.
  for (a2apb::TaskState state : {a2apb::TASK_STATE_WORKING, a2apb::TASK_STATE_INPUT_REQUIRED}) {
    a2apb::StreamResponse update;
    update.mutable_status_update()->mutable_status()->set_state(state);
    ASSERT_OK(tasks.ApplyAgentUpdate(id, update));
  }
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_store.PendingPushes(10);
  ASSERT_OK(pushes);
  ASSERT_FALSE(pushes->empty());
  v1::PushAttempt attempt;
  attempt.set_http_status(200);
  ASSERT_OK(push_store.RecordPushAttempt((*pushes)[0], attempt, /*delivered=*/true));
  message.set_message_id("m-2");
  ASSERT_OK(tasks.AcceptMessage("ghost", message));  // another task, untouched by the purge
  ASSERT_EQ(KindsOf(id), ExpectedKinds(Owner::kA2ATask))
      << "write one record of every kind an A2A task holds";

  absl::StatusOr<int64_t> counted = CountA2ATaskPurge(*store_, id);
  ASSERT_OK(counted);
  // Header, index entry, the queued delivery and the queued webhook call go together.
  const int64_t deleted = PurgeInSteps(4, [&](storage::Transaction& txn, int64_t limit) {
    return PurgeA2ATaskStep(txn, id, limit, [](const v1::StoredTask&) { return true; });
  });
  EXPECT_EQ(KindsOf(id), std::set<Kind>());
  EXPECT_EQ(deleted, *counted);
  absl::StatusOr<std::vector<v1::PendingDelivery>> queued = deliveries.PendingDeliveries(10);
  ASSERT_OK(queued);
  EXPECT_EQ(queued->size(), 1u);  // the other task's
}

TEST_F(RecordOwnershipTest, RunPurgeDeletesEveryKindItWrites) {
  WorkStore work(store_.get(), nullptr, WorkLimits());
  for (const std::string id : {"owned-run", "other-run"}) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(id);
    request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    for (const char* item : {"a", "b", "c"}) {
      v1::WorkItem* w = request.add_items();
      w->set_item_id(item);
      w->set_title(item);
    }
    ASSERT_OK(work.CreateRun(request));
    // One item running (it holds a lease entry), the others pending.
    v1::ClaimRequest claim;
    claim.set_run_id(id);
    claim.set_worker_id("w");
    ASSERT_OK(work.Claim(claim));
  }
  ASSERT_EQ(KindsOf("owned-run"), ExpectedKinds(Owner::kRun))
      << "write one record of every kind a run holds";
  const std::set<Kind> other = KindsOf("other-run");

  absl::StatusOr<int64_t> counted = WorkStore::CountPurge(*store_, "owned-run");
  ASSERT_OK(counted);
  const int64_t deleted = PurgeInSteps(2, [&](storage::Transaction& txn, int64_t limit) {
    return WorkStore::PurgeStep(txn, "owned-run", limit, [](const v1::Run&) { return true; });
  });
  EXPECT_EQ(KindsOf("owned-run"), std::set<Kind>());
  EXPECT_EQ(deleted, *counted);
  EXPECT_EQ(KindsOf("other-run"), other);
  absl::StatusOr<int64_t> leases = work.CountLeases();
  ASSERT_OK(leases);
  EXPECT_EQ(*leases, 1);  // the other run's
}

TEST_F(RecordOwnershipTest, RetryTaskRemovalDeletesEveryKindItWrites) {
  TaskStateStore tasks(store_.get(), TaskStateOptions());
  Breaker breaker(store_.get(), &tasks, BreakerOptions());
  absl::StatusOr<v1::InitTaskResponse> init = tasks.Init("build the parser");
  ASSERT_OK(init);
  const std::string id = init->task_id();
  ASSERT_OK(tasks.RecordFailure(id, "segfault"));
  v1::EscalateRequest escalate;
  escalate.set_task_id(id);
  escalate.set_reason("stuck");
  ASSERT_OK(tasks.Escalate(escalate));
  v1::RecordQualityGateRequest gate;
  gate.set_task_id(id);
  gate.set_check("lint");
  ASSERT_OK(tasks.RecordQualityGate(gate));
  v1::BreakRequest block;
  block.set_task_id(id);
  ASSERT_OK(breaker.Break(block));
  ASSERT_EQ(KindsOf(id), ExpectedKinds(Owner::kRetryTask))
      << "write one record of every kind a retry task holds";

  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    return TaskStateStore::TxnRemoveTask(txn, id, Access()).status();
  }));
  EXPECT_EQ(KindsOf(id), std::set<Kind>());
}

}  // namespace
}  // namespace coordinator
