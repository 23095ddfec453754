// Data care against the real binaries: an online backup taken while writes continue restores
// into a second coordinator with every record of the source (compared through the RPCs and key
// by key in every column family), bad backup and restore paths are refused, `coordctl export`
// writes a whole evaluation as JSON, and `coordctl gc` / background retention delete what ended.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/v1/admin.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/key_codec.h"
#include "storage/rocks_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = ::coordinator::v1;
using ::testing::HasSubstr;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

ProcessResult Ctl(const std::string& target, const std::vector<std::string>& args) {
  absl::StatusOr<ProcessResult> r = testing_util::RunCoordctl(target, args);
  EXPECT_OK(r);
  return r.ok() ? *r : ProcessResult();
}

// The last non-empty line of `text`.
std::string LastLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines.empty() ? "" : lines.back();
}

// Every key and value of every column family of the database at `path`.
std::vector<std::vector<std::pair<std::string, std::string>>> DumpDatabase(
    const std::string& path) {
  storage::StoreOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<storage::RocksStore>> store = storage::RocksStore::Open(options);
  EXPECT_OK(store);
  std::vector<std::vector<std::pair<std::string, std::string>>> out(
      static_cast<size_t>(storage::ColumnFamily::kCount));
  if (!store.ok()) return out;
  for (int cf = 0; cf < static_cast<int>(storage::ColumnFamily::kCount); ++cf) {
    std::unique_ptr<storage::Iterator> it =
        (*store)->NewIterator(static_cast<storage::ColumnFamily>(cf), "", "");
    for (; it->Valid(); it->Next()) {
      out[static_cast<size_t>(cf)].emplace_back(std::string(it->key()), std::string(it->value()));
    }
    EXPECT_OK(it->status());
  }
  return out;
}

// The commands of context `id` as recorded: the count in its header and the command records.
std::pair<int64_t, int64_t> CommandCounts(
    const std::vector<std::pair<std::string, std::string>>& contexts, const std::string& id) {
  const std::string header = coordinator::keys::ContextHeader(id);
  const std::string prefix = coordinator::keys::CommandPrefix(id);
  int64_t in_header = -1;
  int64_t records = 0;
  for (const auto& [key, value] : contexts) {
    if (key == header) {
      v1::TaskContext context;
      // Format byte 1, then the protobuf.
      EXPECT_TRUE(context.ParseFromString(value.substr(1)));
      in_header = context.command_count();
    } else if (absl::StartsWith(key, prefix)) {
      ++records;
    }
  }
  return {in_header, records};
}

class DataCareTest : public ::testing::Test {
 protected:
  std::unique_ptr<CoordinatorProcess> Start(const std::string& data_dir,
                                            const std::vector<std::string>& extra = {}) {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(data_dir, extra);
    EXPECT_OK(c);
    return c.ok() ? *std::move(c) : nullptr;
  }

  TempDir dir_;
};

// Writes contexts, commands, conversations, retry and breaker state, a work run and an ended A2A
// task; returns what the coordinator answers about each, as coordctl --json prints it.
std::vector<std::vector<std::string>> WriteVariedData(const std::string& target) {
  std::vector<std::vector<std::string>> reads;
  for (int i = 0; i < 3; ++i) {
    const std::string id = absl::StrCat("ctx-", i);
    EXPECT_EQ(Ctl(target, {"context", "put", id, "--agent", "green", "--set",
                           absl::StrCat("status=", i % 2 == 0 ? "completed" : "active"), "--set",
                           "suite=rca"})
                  .exit_code,
              0);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(Ctl(target, {"context", "command", id, "--exit-code", absl::StrCat(c), "--", "make",
                             absl::StrCat("step", c)})
                    .exit_code,
                0);
      EXPECT_EQ(
          Ctl(target, {"convo", "append", id, "--role", "agent", "--tokens", "7", "execute: ls"})
              .exit_code,
          0);
    }
    reads.push_back({"context", "get", id, "--json"});
    reads.push_back({"convo", "show", id, "--json"});
  }
  ProcessResult init = Ctl(target, {"task", "init", "rca-eval ctx-0"});
  EXPECT_EQ(init.exit_code, 0) << init.Describe();
  const std::string task_id = LastLine(init.out);
  EXPECT_EQ(Ctl(target, {"task", "fail", task_id, "segfault in parse"}).exit_code, 0);
  EXPECT_EQ(Ctl(target, {"task", "escalate", task_id, "tests fail"}).exit_code, 0);
  EXPECT_EQ(Ctl(target, {"breaker", "break", task_id, "looping"}).exit_code, 0);
  reads.push_back({"task", "state", task_id});
  reads.push_back({"breaker", "status"});
  reads.push_back({"breaker", "log"});

  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  v1::CreateRunRequest run;
  run.mutable_run()->set_run_id("run-1");
  run.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  for (const char* item : {"parser", "lexer"}) {
    v1::WorkItem* w = run.add_items();
    w->set_item_id(item);
    w->set_title(item);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::Run created;
  EXPECT_TRUE(v1::WorkService::NewStub(channel)->CreateRun(&ctx, run, &created).ok());
  EXPECT_EQ(Ctl(target, {"run", "claim", "run-1", "--worker", "w1", "--ttl", "1h"}).exit_code, 0);
  reads.push_back({"run", "status", "run-1", "--json"});

  // An agent that cannot be reached: the one delivery attempt fails and the task ends FAILED.
  EXPECT_EQ(Ctl(target, {"agent", "register", "ghost", "127.0.0.1:1"}).exit_code, 0);
  ProcessResult sent = Ctl(
      target, {"send", "ghost", "hello", "--context", "ctx-1", "--wait", "--for", "60s", "--json"});
  EXPECT_EQ(sent.exit_code, 1) << sent.Describe();
  lf::a2a::v1::Task task;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(LastLine(sent.out), &task).ok())
      << sent.Describe();
  EXPECT_EQ(task.status().state(), lf::a2a::v1::TASK_STATE_FAILED);
  reads.push_back({"watch", task.id(), "--json"});
  reads.push_back({"agent", "list", "--json"});
  return reads;
}

TEST_F(DataCareTest, BackupWhileWritingRestoresEveryRecord) {
  const std::vector<std::string> a2a_flags = {"--a2a_delivery_ttl=1s"};
  std::unique_ptr<CoordinatorProcess> source = Start(dir_.Sub("source"), a2a_flags);
  ASSERT_NE(source, nullptr);
  const std::vector<std::vector<std::string>> reads = WriteVariedData(source->target());
  std::vector<ProcessResult> before;
  for (const auto& args : reads) {
    before.push_back(Ctl(source->target(), args));
    // `watch` of the FAILED task exits 1; every other read succeeds.
    EXPECT_EQ(before.back().exit_code, args[0] == "watch" ? 1 : 0) << before.back().Describe();
    EXPECT_FALSE(before.back().out.empty()) << absl::StrJoin(args, " ");
  }

  // Writes go on while the backup is taken: commands on one busy context.
  ASSERT_EQ(Ctl(source->target(), {"context", "put", "busy"}).exit_code, 0);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  std::thread writer([&] {
    auto stub = v1::ContextService::NewStub(
        grpc::CreateChannel(source->target(), grpc::InsecureChannelCredentials()));
    while (!stop.load()) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      v1::RecordCommandRequest r;
      r.set_context_id("busy");
      r.set_command("true");
      v1::RecordCommandResponse response;
      if (stub->RecordCommand(&ctx, r, &response).ok()) acked.fetch_add(1);
    }
  });
  while (acked.load() < 20) absl::SleepFor(absl::Milliseconds(10));
  const int64_t acked_before_backup = acked.load();
  ProcessResult backup = Ctl(source->target(), {"backup", dir_.Sub("backup")});
  EXPECT_EQ(backup.exit_code, 0) << backup.Describe();
  EXPECT_THAT(backup.out, HasSubstr("backup written to " + dir_.Sub("backup")));
  const int64_t acked_at_backup_end = acked.load();
  while (acked.load() < acked_at_backup_end + 20) absl::SleepFor(absl::Milliseconds(10));
  stop = true;
  writer.join();
  ASSERT_OK(source->Stop());

  // Key by key: the backup holds exactly the source's records, apart from the busy context,
  // whose commands went on after it; that context is consistent in itself and holds every
  // command acknowledged before the backup began.
  const auto source_db = DumpDatabase(dir_.Sub("source"));
  const auto backup_db = DumpDatabase(dir_.Sub("backup"));
  const std::string busy = coordinator::keys::ContextPrefix("busy");
  for (size_t cf = 0; cf < source_db.size(); ++cf) {
    std::vector<std::pair<std::string, std::string>> a, b;
    for (const auto& kv : source_db[cf]) {
      if (!absl::StartsWith(kv.first, busy)) a.push_back(kv);
    }
    for (const auto& kv : backup_db[cf]) {
      if (!absl::StartsWith(kv.first, busy)) b.push_back(kv);
    }
    EXPECT_EQ(a.size(), b.size()) << "column family " << cf;
    EXPECT_TRUE(a == b) << "column family " << cf << " differs";
    EXPECT_FALSE(a.empty()) << "column family " << cf << " is empty";
  }
  const size_t contexts_cf = static_cast<size_t>(storage::ColumnFamily::kContexts);
  const auto [header_count, records] = CommandCounts(backup_db[contexts_cf], "busy");
  EXPECT_EQ(header_count, records);
  EXPECT_GE(records, acked_before_backup);
  const auto [final_count, final_records] = CommandCounts(source_db[contexts_cf], "busy");
  EXPECT_EQ(final_count, final_records);
  EXPECT_LT(records, final_records);

  // A second coordinator starts from the backup and answers every read as the source did.
  std::unique_ptr<CoordinatorProcess> restored =
      Start(dir_.Sub("restored"), {"--restore_from=" + dir_.Sub("backup")});
  ASSERT_NE(restored, nullptr);
  EXPECT_THAT(restored->process().stderr_text(), HasSubstr("restored the backup"));
  for (size_t i = 0; i < reads.size(); ++i) {
    ProcessResult after = Ctl(restored->target(), reads[i]);
    EXPECT_EQ(after.exit_code, before[i].exit_code) << absl::StrJoin(reads[i], " ");
    EXPECT_EQ(after.out, before[i].out) << absl::StrJoin(reads[i], " ");
  }
  ProcessResult busy_get = Ctl(restored->target(), {"context", "get", "busy", "--json"});
  v1::TaskContext busy_context;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(busy_get.out, &busy_context).ok());
  EXPECT_EQ(busy_context.command_count(), records);
  ASSERT_OK(restored->Stop());
}

TEST_F(DataCareTest, BadBackupDirsAreRefusedAndWriteNothing) {
  std::unique_ptr<CoordinatorProcess> c = Start(dir_.Sub("data"));
  ASSERT_NE(c, nullptr);
  std::filesystem::create_directories(dir_.Sub("full"));
  std::ofstream(dir_.Sub("full/keep")) << "x";
  struct Case {
    std::string dir;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"relative/backup", "INVALID_ARGUMENT"},
      {dir_.Sub("a/../b"), "INVALID_ARGUMENT"},
      {dir_.Sub("data/inside"), "INVALID_ARGUMENT"},
      {"/" + std::string(5000, 'x'), "INVALID_ARGUMENT"},
      {dir_.Sub("full"), "FAILED_PRECONDITION"},
      {dir_.Sub("missing/parent/backup"), "FAILED_PRECONDITION"},
  };
  for (const Case& bad : cases) {
    ProcessResult r = Ctl(c->target(), {"backup", bad.dir});
    EXPECT_EQ(r.exit_code, 3) << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(bad.code)) << r.Describe();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("data/inside")));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("missing")));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("b")));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.Sub("full")),
                          std::filesystem::directory_iterator()),
            1);
  EXPECT_EQ(Ctl(c->target(), {"backup"}).exit_code, 2);
  EXPECT_EQ(Ctl(c->target(), {"backup", "a", "b"}).exit_code, 2);
}

// With --backup_root, a backup goes only under it; a missing or relative root stops the start.
TEST_F(DataCareTest, BackupRootConfinesBackups) {
  std::filesystem::create_directories(dir_.Sub("backups"));
  std::unique_ptr<CoordinatorProcess> c =
      Start(dir_.Sub("data"), {"--backup_root=" + dir_.Sub("backups")});
  ASSERT_NE(c, nullptr);
  ProcessResult outside = Ctl(c->target(), {"backup", dir_.Sub("elsewhere")});
  EXPECT_EQ(outside.exit_code, 3) << outside.Describe();
  EXPECT_THAT(outside.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(outside.err, HasSubstr("--backup_root"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("elsewhere")));
  ProcessResult inside = Ctl(c->target(), {"backup", dir_.Sub("backups/b1")});
  EXPECT_EQ(inside.exit_code, 0) << inside.Describe();
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("backups/b1/CURRENT")));

  for (const std::string& root : {dir_.Sub("missing"), std::string("relative")}) {
    absl::StatusOr<ProcessResult> bad = testing_util::RunProcess(
        testing_util::BinaryPath("coordinator"),
        {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir_.Sub("d2"),
         "--backup_root=" + root});
    ASSERT_OK(bad);
    EXPECT_NE(bad->exit_code, 0) << bad->Describe();
    EXPECT_THAT(bad->err, HasSubstr("--backup_root must be an absolute path")) << bad->Describe();
  }
}

TEST_F(DataCareTest, RestoreRefusesANonBackupAndAUsedDataDir) {
  {
    std::unique_ptr<CoordinatorProcess> c = Start(dir_.Sub("data"));
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(Ctl(c->target(), {"context", "put", "keep-me"}).exit_code, 0);
    ASSERT_EQ(Ctl(c->target(), {"backup", dir_.Sub("backup")}).exit_code, 0);
    ASSERT_OK(c->Stop());
  }
  std::filesystem::create_directories(dir_.Sub("empty"));
  absl::StatusOr<ProcessResult> not_backup =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir_.Sub("new"),
                  "--restore_from=" + dir_.Sub("empty")});
  ASSERT_OK(not_backup);
  EXPECT_EQ(not_backup->exit_code, 1) << not_backup->Describe();
  EXPECT_THAT(not_backup->err, HasSubstr("not a backup"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("new")));

  absl::StatusOr<ProcessResult> used =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir_.Sub("data"),
                  "--restore_from=" + dir_.Sub("backup")});
  ASSERT_OK(used);
  EXPECT_EQ(used->exit_code, 1) << used->Describe();
  EXPECT_THAT(used->err, HasSubstr("not empty"));
}

TEST_F(DataCareTest, ExportWritesTheWholeEvaluationAsJson) {
  std::unique_ptr<CoordinatorProcess> c = Start(dir_.Sub("data"), {"--a2a_delivery_ttl=1s"});
  ASSERT_NE(c, nullptr);
  const std::string t = c->target();
  ASSERT_EQ(
      Ctl(t, {"context", "put", "eval-7", "--agent", "green", "--set", "suite=rca"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"context", "command", "eval-7", "--exit-code", "0", "--", "make"}).exit_code,
            0);
  ASSERT_EQ(Ctl(t, {"context", "command", "eval-7", "--exit-code", "2", "--", "./run"}).exit_code,
            0);
  ASSERT_EQ(Ctl(t, {"convo", "append", "eval-7", "--role", "user", "Find the crash"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"convo", "append", "eval-7", "--role", "agent", "execute: ls"}).exit_code, 0);
  ProcessResult init = Ctl(t, {"task", "init", "rca-eval eval-7"});
  const std::string retry_id = LastLine(init.out);
  ASSERT_EQ(Ctl(t, {"task", "fail", retry_id, "policy error"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"breaker", "break", retry_id, "loop"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"agent", "register", "ghost", "127.0.0.1:1"}).exit_code, 0);
  ASSERT_EQ(
      Ctl(t, {"send", "ghost", "hi", "--context", "eval-7", "--wait", "--for", "60s"}).exit_code,
      1);

  ProcessResult exported = Ctl(t, {"export", "eval-7"});
  ASSERT_EQ(exported.exit_code, 0) << exported.Describe();
  v1::ContextExport doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(exported.out, &doc).ok()) << exported.out;
  EXPECT_EQ(doc.context_id(), "eval-7");
  EXPECT_EQ(doc.context().agent(), "green");
  EXPECT_EQ(doc.context().labels().at("suite"), "rca");
  ASSERT_EQ(doc.commands_size(), 2);
  EXPECT_EQ(doc.commands(1).exit_code(), 2);
  ASSERT_EQ(doc.messages_size(), 2);
  EXPECT_EQ(doc.messages(0).text(), "Find the crash");
  EXPECT_EQ(doc.step_count(), 1);  // the agent message
  EXPECT_EQ(doc.message_count(), 2);
  ASSERT_EQ(doc.a2a_tasks_size(), 1);
  EXPECT_EQ(doc.a2a_tasks(0).tenant(), "ghost");
  EXPECT_EQ(doc.a2a_tasks(0).task().status().state(), lf::a2a::v1::TASK_STATE_FAILED);
  EXPECT_GE(doc.a2a_tasks(0).task().history_size(), 1);
  EXPECT_GE(doc.a2a_tasks(0).events_size(), 2);
  ASSERT_EQ(doc.retry_tasks_size(), 1);
  EXPECT_EQ(doc.retry_tasks(0).state().task_id(), retry_id);
  EXPECT_EQ(doc.retry_tasks(0).state().failures_size(), 1);
  EXPECT_EQ(doc.retry_tasks(0).blocked().task_id(), retry_id);
  EXPECT_FALSE(doc.retry_tasks(0).break_summary().empty());
  EXPECT_GE(doc.retry_tasks(0).breaker_log_size(), 1);
  // Field names are protobuf's JSON names (lowerCamelCase).
  EXPECT_THAT(exported.out, HasSubstr("\"a2aTasks\""));
  EXPECT_THAT(exported.out, HasSubstr("\"retryTasks\""));

  ProcessResult unknown = Ctl(t, {"export", "no-such-eval"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.Describe();
  EXPECT_THAT(unknown.err, HasSubstr("not found"));
  EXPECT_TRUE(unknown.out.empty());
  ProcessResult bad = Ctl(t, {"export", std::string(300, 'x')});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_THAT(bad.err, HasSubstr("INVALID_ARGUMENT"));
  std::vector<std::string> many = {"export", "eval-7"};
  for (int i = 0; i < 17; ++i) {
    many.push_back("--retry-task");
    many.push_back(absl::StrCat("t", i));
  }
  EXPECT_EQ(Ctl(t, many).exit_code, 3);
}

TEST_F(DataCareTest, GcDryRunListsThenGcDeletes) {
  std::unique_ptr<CoordinatorProcess> c = Start(dir_.Sub("data"));
  ASSERT_NE(c, nullptr);
  const std::string t = c->target();
  ProcessResult off = Ctl(t, {"gc"});
  EXPECT_EQ(off.exit_code, 3);
  EXPECT_THAT(off.err, HasSubstr("retention is off"));
  ASSERT_EQ(Ctl(t, {"context", "put", "old", "--set", "status=completed"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"convo", "append", "old", "--role", "user", "hi"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"context", "put", "live"}).exit_code, 0);
  absl::SleepFor(absl::Milliseconds(50));

  ProcessResult dry = Ctl(t, {"gc", "--dry-run", "--older-than", "10ms"});
  EXPECT_EQ(dry.exit_code, 0) << dry.Describe();
  EXPECT_THAT(dry.out, HasSubstr("dry run: would delete 4 records"));
  EXPECT_THAT(dry.out, HasSubstr("contexts (1): old"));
  EXPECT_EQ(Ctl(t, {"context", "get", "old"}).exit_code, 0);

  ProcessResult real = Ctl(t, {"gc", "--older-than", "10ms", "--json"});
  ASSERT_EQ(real.exit_code, 0) << real.Describe();
  v1::CollectGarbageResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(real.out, &response).ok());
  // The header, its entry in the contexts' time index, the conversation meta and its message.
  EXPECT_EQ(response.records(), 4);
  ASSERT_EQ(response.context_ids_size(), 1);
  EXPECT_EQ(response.context_ids(0), "old");
  EXPECT_EQ(Ctl(t, {"context", "get", "old"}).exit_code, 1);
  EXPECT_EQ(Ctl(t, {"convo", "show", "old"}).exit_code, 1);
  EXPECT_EQ(Ctl(t, {"context", "get", "live"}).exit_code, 0);

  EXPECT_EQ(Ctl(t, {"gc", "--max-deletes", "0", "--older-than", "1s"}).exit_code, 2);
  EXPECT_EQ(Ctl(t, {"gc", "--max-deletes", "x"}).exit_code, 2);
  EXPECT_EQ(Ctl(t, {"gc", "--older-than", "soon"}).exit_code, 2);
  EXPECT_EQ(Ctl(t, {"gc", "--older-than", "1s", "--max-deletes", "99999999999"}).exit_code, 3);
  EXPECT_EQ(Ctl(t, {"gc", "extra"}).exit_code, 2);
}

TEST_F(DataCareTest, BackgroundRetentionDeletesEndedContexts) {
  std::unique_ptr<CoordinatorProcess> c =
      Start(dir_.Sub("data"), {"--retention_terminal_ttl=1ms", "--retention_period=100ms"});
  ASSERT_NE(c, nullptr);
  const std::string t = c->target();
  ASSERT_EQ(Ctl(t, {"context", "put", "ended", "--set", "status=failed"}).exit_code, 0);
  ASSERT_EQ(Ctl(t, {"context", "put", "running"}).exit_code, 0);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (Ctl(t, {"context", "get", "ended"}).exit_code == 0) {
    ASSERT_LT(absl::Now(), give_up) << "the ended context was never collected";
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(Ctl(t, {"context", "get", "running"}).exit_code, 0);
  EXPECT_THAT(c->process().stderr_text(), HasSubstr("retention: deleted"));
}

TEST_F(DataCareTest, BadRetentionFlagsAreRefused) {
  for (const std::string& flag :
       {std::string("--retention_max_deletes_per_second=0"), std::string("--retention_period=0s"),
        std::string("--retention_terminal_ttl=-5s")}) {
    absl::StatusOr<ProcessResult> r =
        RunProcess(BinaryPath("coordinator"),
                   {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir_.Sub("d"), flag});
    ASSERT_OK(r);
    EXPECT_NE(r->exit_code, 0) << flag;
    EXPECT_THAT(r->err, HasSubstr("retention")) << r->Describe();
  }
}

}  // namespace
