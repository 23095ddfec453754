// Domain-level tests of ContextStore and ConversationStore on a real RocksStore. The gRPC layer
// cannot deliver some inputs (a proto3 string that is not UTF-8 never parses), but in-process
// callers such as the A2A gateway call these classes directly, so their own checks matter.
#include "coordinator/store/contexts/context_store.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "gtest/gtest.h"
#include "storage/key_codec.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using ::testing_util::TempDir;
using v1::TaskContext;

class ContextStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.path());
    ASSERT_OK(store);
    store_ = *std::move(store);
    contexts_ = std::make_unique<ContextStore>(store_.get(), Limits());
    conversations_ = std::make_unique<ConversationStore>(store_.get(), Limits());
  }

  // Every key/value pair in the database's data families, for "nothing changed" checks.
  std::string Dump() {
    std::string out;
    for (ColumnFamily cf : {ColumnFamily::kContexts, ColumnFamily::kIndex}) {
      std::unique_ptr<storage::Iterator> it = store_->NewIterator(cf, "", "");
      for (; it->Valid(); it->Next()) {
        absl::StrAppend(&out, static_cast<int>(cf), ":", it->key(), "=", it->value(), "\n");
      }
      EXPECT_OK(it->status());
    }
    return out;
  }

  // Keys under `id`'s prefix in the contexts family.
  int CountContextKeys(const std::string& id) {
    const std::string prefix = keys::ContextPrefix(id);
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kContexts, prefix, storage::PrefixUpperBound(prefix));
    int n = 0;
    for (; it->Valid(); it->Next()) ++n;
    EXPECT_OK(it->status());
    return n;
  }

  absl::Status Append(const std::string& id, const std::string& text) {
    v1::AppendMessageRequest request;
    request.set_context_id(id);
    request.set_role(v1::ROLE_USER);
    request.set_text(text);
    return conversations_->Append(request).status();
  }

  absl::Status Record(const std::string& id, const std::string& command) {
    v1::RecordCommandRequest request;
    request.set_context_id(id);
    request.set_command(command);
    return contexts_->RecordCommand(request).status();
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<ContextStore> contexts_;
  std::unique_ptr<ConversationStore> conversations_;
};

// Ownership is checked inside the transaction that changes the context: only its owner changes
// it and records its commands; only its parties (or its owner, when it has none) write its
// conversation; unscoped access does all. A refusal changes nothing.
TEST_F(ContextStoreTest, OnlyTheOwnerChangesAContextAndOnlyItsPartiesWriteItsConversation) {
  TaskContext judged;
  judged.set_context_id("eval-1");
  judged.set_agent("green");
  judged.add_parties("purple");
  ASSERT_OK(contexts_->Create(judged).status());
  TaskContext solo;
  solo.set_context_id("solo");
  solo.set_agent("green");
  ASSERT_OK(contexts_->Create(solo).status());
  const Access green = Access::Agent("green");
  const Access purple = Access::Agent("purple");
  const std::string before = Dump();

  v1::UpdateContextRequest update;
  update.mutable_context()->set_context_id("eval-1");
  update.mutable_context()->set_version(1);
  update.mutable_context()->set_status(v1::CONTEXT_STATUS_COMPLETED);
  update.mutable_update_mask()->add_paths("status");
  absl::StatusOr<TaskContext> denied = contexts_->Update(update, purple);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.status().message(),
            "agent purple may not change context eval-1 owned by \"green\"");
  v1::RecordCommandRequest record;
  record.set_context_id("eval-1");
  record.set_command("ls");
  EXPECT_EQ(contexts_->RecordCommand(record, purple).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(contexts_->Delete("eval-1", 0, purple).code(), absl::StatusCode::kPermissionDenied);
  v1::AppendMessageRequest append;
  append.set_context_id("eval-1");
  append.set_role(v1::ROLE_AGENT);
  append.set_text("I am the judge");
  absl::StatusOr<v1::AppendMessageResponse> judge_says = conversations_->Append(append, green);
  EXPECT_EQ(judge_says.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(judge_says.status().message(),
            "agent green may not write the conversation of context eval-1: only its parties "
            "(purple) write it");
  append.set_context_id("solo");
  EXPECT_EQ(conversations_->Append(append, purple).status().code(),
            absl::StatusCode::kPermissionDenied);
  append.set_context_id("nowhere");
  EXPECT_EQ(conversations_->Append(append, purple).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Dump(), before);

  ASSERT_OK(contexts_->Update(update, green).status());
  ASSERT_OK(contexts_->RecordCommand(record, green).status());
  append.set_context_id("eval-1");
  ASSERT_OK(conversations_->Append(append, purple).status());
  append.set_context_id("solo");
  ASSERT_OK(conversations_->Append(append, green).status());
  append.set_context_id("nowhere");
  ASSERT_OK(conversations_->Append(append).status());  // unscoped: no context needed
  ASSERT_OK(contexts_->Delete("solo", 0, green));
  ASSERT_OK(contexts_->Delete("eval-1", 0, Access::Admin("ops")));
}

TEST_F(ContextStoreTest, InvalidUtf8IsRefusedAtTheDomainLevel) {
  TaskContext existing;
  existing.set_context_id("existing");
  ASSERT_OK(contexts_->Create(existing));
  const std::string before = Dump();

  const std::string bad("id-\xc3\x28", 5);
  TaskContext context;
  context.set_context_id(bad);
  EXPECT_EQ(contexts_->Create(context).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(contexts_->Get(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(contexts_->Delete(bad, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Record(bad, "ls").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Append(bad, "hi").code(), absl::StatusCode::kInvalidArgument);

  TaskContext bad_agent;
  bad_agent.set_context_id("fresh");
  bad_agent.set_agent(bad);
  EXPECT_EQ(contexts_->Create(bad_agent).status().code(), absl::StatusCode::kInvalidArgument);
  TaskContext bad_label;
  bad_label.set_context_id("fresh");
  (*bad_label.mutable_labels())[bad] = "v";
  EXPECT_EQ(contexts_->Create(bad_label).status().code(), absl::StatusCode::kInvalidArgument);

  v1::UpdateContextRequest update;
  update.mutable_context()->set_context_id("existing");
  update.mutable_context()->set_version(1);
  update.mutable_context()->set_external_task_id(bad);
  EXPECT_EQ(contexts_->Update(update).status().code(), absl::StatusCode::kInvalidArgument);

  v1::ListContextsRequest list;
  list.set_agent(bad);
  EXPECT_EQ(contexts_->List(list).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dump(), before);
}

TEST_F(ContextStoreTest, DeleteRemovesEveryRecordOfTheContextOnly) {
  // Many records of every kind, and a neighbour whose id extends this one.
  TaskContext context;
  context.set_context_id("ctx");
  context.set_agent("green");
  ASSERT_OK(contexts_->Create(context));
  TaskContext neighbour;
  neighbour.set_context_id("ctx2");
  neighbour.set_agent("green");
  ASSERT_OK(contexts_->Create(neighbour));
  for (int i = 0; i < 500; ++i) ASSERT_OK(Record("ctx", absl::StrCat("command ", i)));
  for (int i = 0; i < 100; ++i) ASSERT_OK(Append("ctx", absl::StrCat("message ", i)));
  ASSERT_OK(Record("ctx2", "keep"));
  ASSERT_OK(Append("ctx2", "keep"));
  EXPECT_EQ(CountContextKeys("ctx"), 1 + 500 + 1 + 100);
  const int neighbour_keys = CountContextKeys("ctx2");

  ASSERT_OK(contexts_->Delete("ctx", 0));
  EXPECT_EQ(CountContextKeys("ctx"), 0);
  EXPECT_EQ(CountContextKeys("ctx2"), neighbour_keys);
  EXPECT_EQ(store_->Get(ColumnFamily::kIndex, keys::AgentIndex("green", "ctx")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_OK(store_->Get(ColumnFamily::kIndex, keys::AgentIndex("green", "ctx2")));
}

// A retry of a command or a message carries the request_id of the original: answered from the
// record, nothing counted twice, across stores reopened in between (the answer was lost).
TEST_F(ContextStoreTest, ARetryWithTheSameRequestIdIsAnsweredFromTheRecord) {
  TaskContext context;
  context.set_context_id("ctx");
  context.set_agent("green");
  ASSERT_OK(contexts_->Create(context));
  v1::RecordCommandRequest command;
  command.set_context_id("ctx");
  command.set_command("make");
  command.set_exit_code(2);
  command.set_request_id("req-1");
  absl::StatusOr<v1::RecordCommandResponse> first = contexts_->RecordCommand(command);
  ASSERT_OK(first);
  ASSERT_OK(Record("ctx", "another writer's command"));
  const std::string before = Dump();
  absl::StatusOr<v1::RecordCommandResponse> retry = contexts_->RecordCommand(command);
  ASSERT_OK(retry);
  EXPECT_EQ(Dump(), before) << "a retry writes nothing";
  EXPECT_EQ(retry->record().seq(), first->record().seq());
  EXPECT_EQ(retry->record().command(), "make");
  EXPECT_EQ(retry->context().command_count(), 2);  // the context as it is now
  EXPECT_EQ(retry->context().failed_commands(), 1);
  // The same id with another command is a mistake, not a retry; another context is another id.
  v1::RecordCommandRequest other = command;
  other.set_command("make install");
  EXPECT_EQ(contexts_->RecordCommand(other).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dump(), before);
  TaskContext second;
  second.set_context_id("ctx-b");
  second.set_agent("green");
  ASSERT_OK(contexts_->Create(second));
  v1::RecordCommandRequest elsewhere = command;
  elsewhere.set_context_id("ctx-b");
  absl::StatusOr<v1::RecordCommandResponse> b = contexts_->RecordCommand(elsewhere);
  ASSERT_OK(b);
  EXPECT_EQ(b->context().command_count(), 1);

  v1::AppendMessageRequest message;
  message.set_context_id("ctx");
  message.set_role(v1::ROLE_AGENT);
  message.set_text("execute: ls");
  message.set_tokens(7);
  message.set_request_id("req-1");  // ids of commands and of messages are apart
  absl::StatusOr<v1::AppendMessageResponse> appended = conversations_->Append(message);
  ASSERT_OK(appended);
  ASSERT_OK(Append("ctx", "another writer's message"));
  absl::StatusOr<v1::AppendMessageResponse> again = conversations_->Append(message);
  ASSERT_OK(again);
  EXPECT_EQ(again->message().seq(), appended->message().seq());
  EXPECT_EQ(again->step_count(), 1);  // one AGENT message among the two
  EXPECT_EQ(again->message_count(), 2);
  EXPECT_EQ(again->total_tokens(), 7);
  v1::AppendMessageRequest changed = message;
  changed.set_text("execute: rm -rf /");
  EXPECT_EQ(conversations_->Append(changed).status().code(), absl::StatusCode::kInvalidArgument);

  // Hostile ids are refused before anything is read or written.
  const std::string unchanged = Dump();
  v1::RecordCommandRequest bad = command;
  bad.set_request_id(
      std::string("a\x01"
                  "b"));
  EXPECT_EQ(contexts_->RecordCommand(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.set_request_id(std::string(300, 'x'));
  EXPECT_EQ(contexts_->RecordCommand(bad).status().code(), absl::StatusCode::kInvalidArgument);
  v1::AppendMessageRequest bad_message = message;
  bad_message.set_request_id("\xff\xfe");
  EXPECT_EQ(conversations_->Append(bad_message).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dump(), unchanged);

  // The request ids go with their context.
  ASSERT_OK(contexts_->Delete("ctx", 0));
  EXPECT_EQ(CountContextKeys("ctx"), 0);
}

TEST_F(ContextStoreTest, DeleteOfAConversationWithoutAContext) {
  ASSERT_OK(Append("purple-only", "hello"));
  ASSERT_OK(contexts_->Delete("purple-only", 0));
  EXPECT_EQ(CountContextKeys("purple-only"), 0);
  EXPECT_EQ(contexts_->Delete("purple-only", 0).code(), absl::StatusCode::kNotFound);
}

TEST_F(ContextStoreTest, ConcurrentAppendsAndRecordsCountExactly) {
  TaskContext context;
  context.set_context_id("ctx");
  ASSERT_OK(contexts_->Create(context));
  constexpr int kThreads = 8;
  constexpr int kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(t % 2 == 0 ? Record("ctx", "ls") : Append("ctx", "hi"));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  absl::StatusOr<TaskContext> read = contexts_->Get("ctx");
  ASSERT_OK(read);
  EXPECT_EQ(read->command_count(), kThreads / 2 * kEach);
  v1::GetConversationRequest request;
  request.set_context_id("ctx");
  request.set_page_size(1000);
  absl::StatusOr<v1::GetConversationResponse> conversation = conversations_->Read(request);
  ASSERT_OK(conversation);
  EXPECT_EQ(conversation->message_count(), kThreads / 2 * kEach);
  EXPECT_EQ(conversation->step_count(), 0);  // every message is a USER one
  EXPECT_EQ(conversation->messages_size(), kThreads / 2 * kEach);
  for (int i = 0; i < conversation->messages_size(); ++i) {
    EXPECT_EQ(conversation->messages(i).seq(), i + 1);
  }
}

TEST_F(ContextStoreTest, CorruptStoredRecordIsDataLossNotACrash) {
  ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) -> absl::Status {
    // A format byte this binary knows, then bytes that are not a TaskContext.
    return txn.Put(ColumnFamily::kContexts, keys::ContextHeader("broken"),
                   std::string("\x01\xff\xff\xff\xff", 5));
  }));
  EXPECT_EQ(contexts_->Get("broken").status().code(), absl::StatusCode::kDataLoss);
  ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) -> absl::Status {
    return txn.Put(ColumnFamily::kContexts, keys::ContextHeader("newer"), std::string("\x07x", 2));
  }));
  EXPECT_EQ(contexts_->Get("newer").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Record("broken", "ls").code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace coordinator

namespace coordinator {
namespace {

// The change hooks (the web console's feed) hear each committed change with its context_id, and
// nothing for a change that failed.
TEST_F(ContextStoreTest, ChangeHooksHearCommittedChangesOnly) {
  std::vector<std::string> heard;
  contexts_->set_on_change([&heard](const std::string& id) { heard.push_back("context " + id); });
  conversations_->set_on_change(
      [&heard](const std::string& id) { heard.push_back("conversation " + id); });
  v1::TaskContext context;
  context.set_context_id("hooked");
  ASSERT_OK(contexts_->Create(context));
  EXPECT_FALSE(contexts_->Create(context).ok());  // exists: nothing to hear
  ASSERT_OK(Record("hooked", "make"));
  EXPECT_FALSE(Record("absent", "make").ok());
  ASSERT_OK(Append("hooked", "hello"));
  ASSERT_OK(contexts_->Delete("hooked", 0));
  EXPECT_EQ(heard, (std::vector<std::string>{"context hooked", "context hooked",
                                             "conversation hooked", "context hooked"}));
}

// The web console lists evaluations newest first from the contexts' time index: by create time
// (not by id), a page at a time, a page bounded by the index entries it reads, and a context
// deleted is gone from it.
TEST_F(ContextStoreTest, ListNewestGoesByCreateTimeAPageAtATime) {
  for (const char* id : {"c", "b", "a", "d"}) {
    v1::TaskContext context;
    context.set_context_id(id);
    context.set_status(std::string(id) == "d" ? v1::CONTEXT_STATUS_COMPLETED
                                              : v1::CONTEXT_STATUS_ACTIVE);
    ASSERT_OK(contexts_->Create(context));
    absl::SleepFor(absl::Milliseconds(2));  // distinct create times
  }
  auto ids = [](const ContextStore::NewestPage& page) {
    std::vector<std::string> out;
    for (const v1::TaskContext& c : page.contexts) out.push_back(c.context_id());
    return out;
  };
  auto all = [](const v1::TaskContext&) { return true; };
  absl::StatusOr<ContextStore::NewestPage> first = contexts_->ListNewest(2, 100, "", all);
  ASSERT_OK(first);
  EXPECT_EQ(ids(*first), (std::vector<std::string>{"d", "a"}));
  ASSERT_FALSE(first->next_page_token.empty());
  absl::StatusOr<ContextStore::NewestPage> second =
      contexts_->ListNewest(2, 100, first->next_page_token, all);
  ASSERT_OK(second);
  EXPECT_EQ(ids(*second), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(second->next_page_token.empty());

  // A filter: only what it keeps; and a page stops after `max_scan` entries whatever it found.
  auto active = [](const v1::TaskContext& c) { return c.status() == v1::CONTEXT_STATUS_ACTIVE; };
  absl::StatusOr<ContextStore::NewestPage> bounded = contexts_->ListNewest(10, 1, "", active);
  ASSERT_OK(bounded);
  EXPECT_TRUE(bounded->contexts.empty());  // "d" was read, and is not active
  absl::StatusOr<ContextStore::NewestPage> rest =
      contexts_->ListNewest(10, 100, bounded->next_page_token, active);
  ASSERT_OK(rest);
  EXPECT_EQ(ids(*rest), (std::vector<std::string>{"a", "b", "c"}));

  ASSERT_OK(contexts_->Delete("a", 0));
  absl::StatusOr<ContextStore::NewestPage> after = contexts_->ListNewest(10, 100, "", all);
  ASSERT_OK(after);
  EXPECT_EQ(ids(*after), (std::vector<std::string>{"d", "b", "c"}));
  EXPECT_EQ(contexts_->ListNewest(10, 100, "garbage!", all).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A database written before the time index existed gets it built at start, once.
TEST_F(ContextStoreTest, EnsureTimeIndexBuildsTheIndexOfAnOlderDatabase) {
  for (const char* id : {"x", "y"}) {
    v1::TaskContext context;
    context.set_context_id(id);
    ASSERT_OK(contexts_->Create(context));
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) -> absl::Status {
    for (const std::string& prefix :
         {keys::ContextsByTimePrefix(), keys::DerivedBuilt("contexts-by-time")}) {
      std::unique_ptr<storage::Iterator> it =
          txn.NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
      for (; it->Valid(); it->Next()) {
        if (absl::Status s = txn.Delete(ColumnFamily::kIndex, it->key()); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }));
  auto all = [](const v1::TaskContext&) { return true; };
  EXPECT_TRUE(contexts_->ListNewest(10, 100, "", all)->contexts.empty());
  absl::StatusOr<bool> built = ContextStore::EnsureTimeIndex(*store_);
  ASSERT_OK(built);
  EXPECT_TRUE(*built);
  absl::StatusOr<ContextStore::NewestPage> page = contexts_->ListNewest(10, 100, "", all);
  ASSERT_OK(page);
  ASSERT_EQ(page->contexts.size(), 2u);
  EXPECT_EQ(page->contexts[0].context_id(), "y");
  built = ContextStore::EnsureTimeIndex(*store_);
  ASSERT_OK(built);
  EXPECT_FALSE(*built);
}

// A step is one of the agent's own turns: its AGENT messages, as the agents' step_count counts
// them; the observations and markers around them are messages.
TEST_F(ContextStoreTest, StepsAreTheAgentsMessagesAndMessagesAreCountedApart) {
  const v1::Role roles[] = {v1::ROLE_SYSTEM, v1::ROLE_USER,  v1::ROLE_AGENT,
                            v1::ROLE_USER,   v1::ROLE_AGENT, v1::ROLE_USER};
  for (v1::Role role : roles) {
    v1::AppendMessageRequest request;
    request.set_context_id("ctx");
    request.set_role(role);
    request.set_text("m");
    ASSERT_OK(conversations_->Append(request));
  }
  v1::GetConversationRequest read;
  read.set_context_id("ctx");
  read.set_tail(1);
  absl::StatusOr<v1::GetConversationResponse> page = conversations_->Read(read);
  ASSERT_OK(page);
  EXPECT_EQ(page->step_count(), 2);
  EXPECT_EQ(page->message_count(), 6);
  EXPECT_EQ(page->messages_size(), 1);
}

// A conversation stored before steps were kept has only the message count (then named
// step_count, same field number): its steps are counted from its messages, and kept from the
// next append on.
TEST_F(ContextStoreTest, AConversationStoredBeforeStepsWereKeptCountsThem) {
  for (v1::Role role : {v1::ROLE_USER, v1::ROLE_AGENT, v1::ROLE_AGENT}) {
    v1::AppendMessageRequest request;
    request.set_context_id("old");
    request.set_role(role);
    request.set_text("m");
    ASSERT_OK(conversations_->Append(request));
  }
  // Rewrite the meta as the older code wrote it.
  absl::StatusOr<std::optional<v1::ConversationMeta>> meta =
      ConversationStore::ReadMeta(*store_, "old");
  ASSERT_OK(meta);
  ASSERT_TRUE(meta->has_value());
  v1::ConversationMeta old = **meta;
  old.clear_step_count();
  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) {
    return txn.Put(ColumnFamily::kContexts, keys::ConversationMeta("old"), EncodeRecord(old));
  }));

  v1::GetConversationRequest read;
  read.set_context_id("old");
  absl::StatusOr<v1::GetConversationResponse> page = conversations_->Read(read);
  ASSERT_OK(page);
  EXPECT_EQ(page->step_count(), 2);
  EXPECT_EQ(page->message_count(), 3);

  v1::AppendMessageRequest next;
  next.set_context_id("old");
  next.set_role(v1::ROLE_AGENT);
  next.set_text("m");
  absl::StatusOr<v1::AppendMessageResponse> appended = conversations_->Append(next);
  ASSERT_OK(appended);
  EXPECT_EQ(appended->step_count(), 3);
  EXPECT_EQ(appended->message_count(), 4);
  meta = ConversationStore::ReadMeta(*store_, "old");
  ASSERT_OK(meta);
  ASSERT_TRUE(meta->has_value());
  EXPECT_TRUE((*meta)->has_step_count());
  EXPECT_EQ((*meta)->step_count(), 3);
}

}  // namespace
}  // namespace coordinator
