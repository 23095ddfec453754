// The work model's coordctl commands as scripts use them (docs/work.md): the real coordctl
// against a real coordinator. run add, run status --status, run workers, run stop-worker,
// run level merge, run events (and --follow), and claims with capabilities; every one refuses
// malformed, oversized and hostile input with exit 2 (usage) or 3 and one line on stderr,
// changing nothing.
#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/v1/work.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::TempDir;

std::vector<std::string> NonEmptyLines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines;
}

class WorkModelProcessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
        CoordinatorProcess::Start(dir_->Sub("data"));
    ASSERT_OK(coordinator);
    coordinator_ = coordinator->release();
  }
  static void TearDownTestSuite() {
    delete coordinator_;
    coordinator_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(coordinator_, nullptr); }

  ProcessResult Run(const std::vector<std::string>& args) {
    absl::StatusOr<ProcessResult> r = testing_util::RunCoordctl(coordinator_->target(), args);
    EXPECT_OK(r);
    return r.ok() ? *r : ProcessResult();
  }

  // A test-unique run made from `graph_json`.
  std::string ImportRun(const std::string& graph_json) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string run_id = info->name();
    const std::string path = WriteFile(absl::StrCat(run_id, ".json"), graph_json);
    ProcessResult r = Run({"run", "import", path, "--run-id", run_id});
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    return run_id;
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_->Sub(name);
    std::ofstream(path) << text;
    return path;
  }

  // The item ids of `run status <run> [extra...] --json`.
  std::vector<std::string> ItemIds(const std::string& run_id,
                                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run", "status", run_id, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    google::protobuf::Struct parsed;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) << r.out;
    std::vector<std::string> ids;
    for (const auto& item : parsed.fields().at("items").list_value().values()) {
      ids.push_back(item.struct_value().fields().at("itemId").string_value());
    }
    return ids;
  }

  // The lease of a claim by `worker`, or "" when none was claimable.
  std::string Claim(const std::string& run_id, const std::string& worker,
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run", "claim", run_id, "--worker", worker};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Run(args);
    coordinator::v1::ClaimResponse response;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &response).ok()) << r.out;
    return response.lease();
  }

  // Runs `args` and expects it refused with `exit_code` and one line on stderr; the run's
  // status output is unchanged.
  void ExpectRefused(const std::string& run_id, const std::vector<std::string>& args,
                     int exit_code) {
    const std::string before = Run({"run", "status", run_id, "--json"}).out;
    ProcessResult r = Run(args);
    EXPECT_EQ(r.exit_code, exit_code) << r.Describe();
    EXPECT_THAT(r.err, StartsWith("coordctl: ")) << r.Describe();
    // One line; a command line missing arguments also shows the usage line.
    EXPECT_LE(NonEmptyLines(r.err).size(), exit_code == 2 ? 2u : 1u) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Run({"run", "status", run_id, "--json"}).out, before) << "something changed";
  }

  static TempDir* dir_;
  static CoordinatorProcess* coordinator_;
};

TempDir* WorkModelProcessTest::dir_ = nullptr;
CoordinatorProcess* WorkModelProcessTest::coordinator_ = nullptr;

TEST_F(WorkModelProcessTest, AddFilterWorkersLevelsAndEvents) {
  const std::string run =
      ImportRun(R"({"feature": "f", "tasks": [{"id": "A", "level": 1}, {"id": "B", "level": 2}]})");
  // Items added to the running run, from an items file and from spec files.
  const std::string items =
      WriteFile("items.json", R"([{"id": "C", "level": 2, "dependencies": ["B"], "adapter": "codex",
                        "requiredCapabilities": ["gpu"]}])");
  ProcessResult added = Run({"run", "add", run, "--items", items});
  ASSERT_EQ(added.exit_code, 0) << added.Describe();
  EXPECT_EQ(added.out, "C\n");
  const std::string spec = WriteFile("payment-flow.md", "# Payment flow\n");
  added = Run({"run", "add", run, "--spec", spec, "--level", "2", "--depends-on", "A"});
  ASSERT_EQ(added.exit_code, 0) << added.Describe();
  EXPECT_EQ(added.out, "payment-flow\n");
  EXPECT_THAT(ItemIds(run), ElementsAre("A", "B", "C", "payment-flow"));

  // Claims: A first (level 1); a worker without gpu never gets C.
  const std::string a = Claim(run, "w1", {"--pid", "1234"});
  ASSERT_FALSE(a.empty());
  EXPECT_THAT(ItemIds(run, {"--status", "running"}), ElementsAre("A"));
  EXPECT_THAT(ItemIds(run, {"--status", "pending"}), ElementsAre("B", "C", "payment-flow"));
  EXPECT_TRUE(ItemIds(run, {"--status", "done"}).empty());
  ProcessResult workers = Run({"run", "workers", run});
  ASSERT_EQ(workers.exit_code, 0) << workers.Describe();
  EXPECT_THAT(workers.out, HasSubstr("WORKER"));
  EXPECT_THAT(NonEmptyLines(workers.out)[1], HasSubstr("w1"));
  EXPECT_THAT(NonEmptyLines(workers.out)[1], HasSubstr("busy"));
  EXPECT_THAT(NonEmptyLines(workers.out)[1], HasSubstr("1234"));

  // A level that is not complete is not merged.
  ProcessResult early = Run({"run", "level", "merge", run, "1"});
  EXPECT_EQ(early.exit_code, 3) << early.Describe();
  EXPECT_THAT(early.err, HasSubstr("level 1 of run " + run + " is running"));
  ASSERT_EQ(Run({"run", "complete", a}).exit_code, 0);
  ProcessResult merged = Run({"run", "level", "merge", run, "1", "--commit", "abc123"});
  ASSERT_EQ(merged.exit_code, 0) << merged.Describe();
  EXPECT_THAT(merged.out, HasSubstr("level 1 merged"));
  EXPECT_THAT(merged.out, HasSubstr("levels 1 merged, 2 pending"));
  ProcessResult status = Run({"run", "status", run});
  EXPECT_THAT(NonEmptyLines(status.out)[0], HasSubstr("current level 2"));

  const std::string b = Claim(run, "w1");
  ASSERT_FALSE(b.empty());
  ASSERT_EQ(Run({"run", "complete", b}).exit_code, 0);
  // C needs gpu: w2 gets payment-flow, then nothing (the claim says what it lacks); w3 has gpu.
  ProcessResult w2 = Run({"run", "claim", run, "--worker", "w2"});
  ASSERT_EQ(w2.exit_code, 0) << w2.Describe();
  coordinator::v1::ClaimResponse payment;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w2.out, &payment).ok()) << w2.out;
  EXPECT_EQ(payment.item().item_id(), "payment-flow");
  ProcessResult none = Run({"run", "claim", run, "--worker", "w2"});
  EXPECT_EQ(none.exit_code, 1) << none.Describe();
  EXPECT_THAT(none.out, HasSubstr("\"missingCapabilities\":[\"gpu\"]"));
  const std::string c = Claim(run, "w3", {"--capability", "gpu"});
  ASSERT_FALSE(c.empty());
  ASSERT_EQ(Run({"run", "complete", c}).exit_code, 0);
  ASSERT_EQ(Run({"run", "complete", payment.lease()}).exit_code, 0);
  ProcessResult stop = Run({"run", "stop-worker", run, "w2", "--reason", "done for today"});
  ASSERT_EQ(stop.exit_code, 0) << stop.Describe();
  EXPECT_EQ(stop.out, "w2 stopped\n");

  // The log: one JSON object per line, in seq order, and --follow ends with the run.
  ProcessResult events = Run({"run", "events", run});
  ASSERT_EQ(events.exit_code, 0) << events.Describe();
  std::vector<std::string> lines = NonEmptyLines(events.out);
  ASSERT_GT(lines.size(), 10u);
  std::vector<std::string> kinds;
  for (size_t i = 0; i < lines.size(); ++i) {
    google::protobuf::Struct entry;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(lines[i], &entry).ok()) << lines[i];
    EXPECT_EQ(entry.fields().at("seq").number_value(), static_cast<double>(i + 1));
    kinds.push_back(entry.fields().at("event").string_value());
  }
  EXPECT_EQ(kinds.front(), "run_created");
  for (const char* kind : {"item_created", "item_claimed", "item_completed", "level_changed",
                           "worker_changed", "run_status_changed"}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << kind;
  }
  EXPECT_THAT(events.out, HasSubstr(R"("level_status":"merged","message":"abc123")"));
  EXPECT_THAT(events.out, HasSubstr(R"("worker_status":"stopped","message":"done for today")"));
  ProcessResult tail = Run({"run", "events", run, "--after", "3"});
  EXPECT_EQ(NonEmptyLines(tail.out).size(), lines.size() - 3);
  ProcessResult follow = Run({"run", "events", run, "--follow", "--poll", "50ms"});
  EXPECT_EQ(follow.exit_code, 0) << follow.Describe();
  EXPECT_EQ(follow.out, events.out);
}

TEST_F(WorkModelProcessTest, RefusesMalformedOversizedAndHostileInput) {
  const std::string run =
      ImportRun(R"({"feature": "f", "tasks": [{"id": "A", "level": 1}, {"id": "B", "level": 2}]})");
  // Usage errors: exit 2.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "status", run, "--status", "sideways"},
           {"run", "status", run, "--status", ""},
           {"run", "level", "merge", run, "one"},
           {"run", "level", "merge", run, "-1"},
           {"run", "level", "merge", run, "99999999999999999999"},
           {"run", "level", "merge", run},
           {"run", "add", run},
           {"run", "add", run, "--items", "x.json", "--spec", "y.md"},
           {"run", "add", run, "--items", "x.json", "--level", "3"},
           {"run", "add", run, "--spec", "y.md", "--level", "-2"},
           {"run", "events", run, "--after", "-1"},
           {"run", "events", run, "--after", "x"},
           {"run", "events", run, "--poll", "0s"},
           {"run", "claim", run, "--worker", "w", "--pid", "12abc"},
           {"run", "heartbeat", "lease", "--pid", "x"},
           {"run", "workers"},
           {"run", "stop-worker", run},
       }) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ExpectRefused(run, args, 2);
  }
  // Refused by the coordinator or the file: exit 3 (1 for not found).
  const std::string garbage = WriteFile("garbage.json", "{not json");
  const std::string cycle =
      WriteFile("cycle.json", R"([{"id": "X", "level": 2, "dependencies": ["Y"]},
                                  {"id": "Y", "level": 2, "dependencies": ["X"]}])");
  const std::string unknown =
      WriteFile("unknown.json", R"([{"id": "X", "level": 2, "dependencies": ["nope"]}])");
  const std::string duplicate = WriteFile("dup.json", R"([{"id": "A", "level": 2}])");
  const std::string hostile = WriteFile("hostile.json", R"([{"id": "bad\u0000id", "level": 2}])");
  const std::string caps =
      WriteFile("caps.json", R"([{"id": "X", "level": 2, "required_capabilities": ["a", "a"]}])");
  const std::string big = dir_->Sub("big.json");
  {
    std::ofstream out(big);
    out << R"([{"id": "X", "description": ")" << std::string(5 << 20, 'd') << R"("}])";
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "add", run, "--items", garbage},
           {"run", "add", run, "--items", cycle},
           {"run", "add", run, "--items", unknown},
           {"run", "add", run, "--items", duplicate},
           {"run", "add", run, "--items", hostile},
           {"run", "add", run, "--items", caps},
           {"run", "add", run, "--items", big},
           {"run", "add", run, "--items", dir_->Sub("missing.json")},
           {"run", "add", run, "--spec", dir_->Sub("missing.md")},
           {"run", "level", "merge", run, "1"},
           {"run", "level", "merge", run, "1", "--commit", std::string(300, 'c')},
           {"run", "level", "merge", run, "1", "--commit", "a\x01"},
           {"run", "claim", run, "--worker", "w", "--capability", std::string(300, 'c')},
           {"run", "claim", run, "--worker", "w", "--capability", "x", "--capability", "x"},
           {"run", "claim", run, "--worker", "w", "--pid", "-5"},
           {"run", "claim", run, "--worker", "w", "--capability", "tab\there"},
           {"run", "stop-worker", run, "w\x7f"},
       }) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ExpectRefused(run, args, 3);
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "level", "merge", run, "7"},
           {"run", "stop-worker", run, "nobody"},
           {"run", "workers", "no-such-run"},
           {"run", "events", "no-such-run"},
           {"run", "add", "no-such-run", "--items", duplicate},
       }) {
    SCOPED_TRACE(absl::StrJoin(args, " "));
    ExpectRefused(run, args, 1);
  }
  // The run is as it was: two items, nobody registered.
  EXPECT_EQ(Run({"run", "workers", run}).out.find("w "), std::string::npos);
}

}  // namespace
