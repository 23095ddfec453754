// The ARVO evaluation harness's conventions (docs/compat.md, "Evaluation harness"), with the
// real binaries: green_agent --layout=arvo started by "arvo:<number>", the workspace at
// <workspaces>/arvo_<number>-<agent under test>/workspace with src-vul/ and <number>_error.txt,
// the context labelled arvo_id, and a second evaluation of the same task starting from a fresh
// copy. The task bundle is the example heap-overflow-record under the ARVO number 14368, and the
// scripted purple agent uses the ARVO names. Every wait polls with a bound.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
namespace fs = std::filesystem;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using ::testing_util::kProcessWait;
using testing_util::Process;
using testing_util::TempDir;

// The example bundle under the ARVO number, with a purple script that uses the ARVO names.
void MakeTasks(const std::string& tasks) {
  const fs::path from = fs::path(COORD_SOURCE_DIR) / "examples/tasks/heap-overflow-record";
  const fs::path to = fs::path(tasks) / "14368";
  fs::create_directories(to);
  fs::copy(from / "src", to / "src", fs::copy_options::recursive);
  fs::copy_file(from / "crash_report.txt", to / "crash_report.txt");
  fs::copy_file(from / "ground_truth.json", to / "ground_truth.json");
  std::ofstream(to / "purple_script.json") << R"([
  "execute: ls src-vul",
  "execute: grep -n SUMMARY 14368_error.txt",
  "execute: sh -c 'printf %s \"$0\" > shared/loc.json' '{\"locations\": [{\"file\": \"src-vul/record.c\", \"function\": \"parse_record\", \"line\": 12}]}'",
  "submit"
])";
}

class ArvoLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeTasks(dir_.Sub("tasks"));
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), {"--http_listen="});
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    channel_ = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    a2a_ = a2apb::A2AService::NewStub(channel_);
    contexts_ = v1::ContextService::NewStub(channel_);
    green_ = Start("green_agent", {"--tasks_dir=" + dir_.Sub("tasks"),
                                   "--workspaces_dir=" + dir_.Sub("workspaces"), "--layout=arvo"});
    purple_ = Start("purple_agent", {"--policy=script:" + dir_.Sub("tasks")});
  }

  std::unique_ptr<Process> Start(const std::string& binary, std::vector<std::string> args) {
    args.push_back("--coordinator=" + coordinator_->target());
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(BinaryPath(binary), args);
    EXPECT_OK(p);
    if (!p.ok()) return nullptr;
    EXPECT_OK((*p)->WaitForStderrLine("registered with the coordinator", kProcessWait));
    return *std::move(p);
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  }

  // Sends `text` to green in `context_id` and waits for the evaluation's end.
  a2apb::Task Evaluate(const std::string& text, const std::string& context_id) {
    a2apb::SendMessageRequest request;
    request.set_tenant("green");
    request.mutable_message()->set_message_id(absl::StrCat("m-", context_id));
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->set_context_id(context_id);
    request.mutable_message()->add_parts()->set_text(text);
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse sent;
    grpc::Status s = a2a_->SendMessage(Ctx().get(), request, &sent);
    EXPECT_TRUE(s.ok()) << s.error_message();
    const absl::Time deadline = absl::Now() + kProcessWait;
    a2apb::Task task;
    while (absl::Now() < deadline) {
      a2apb::GetTaskRequest get;
      get.set_id(sent.task().id());
      task.Clear();
      if (a2a_->GetTask(Ctx().get(), get, &task).ok()) {
        const a2apb::TaskState st = task.status().state();
        if (st == a2apb::TASK_STATE_COMPLETED || st == a2apb::TASK_STATE_FAILED ||
            st == a2apb::TASK_STATE_REJECTED || st == a2apb::TASK_STATE_CANCELED) {
          return task;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "evaluation did not end: " << task.DebugString()
                  << "\ngreen: " << green_->stderr_text() << "\npurple: " << purple_->stderr_text();
    return task;
  }

  static std::string StatusText(const a2apb::Task& task) {
    std::string text;
    for (const auto& p : task.status().message().parts()) text += p.text();
    return text;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  std::unique_ptr<v1::ContextService::Stub> contexts_;
  std::unique_ptr<Process> green_;
  std::unique_ptr<Process> purple_;
};

TEST_F(ArvoLayoutTest, AnArvoTriggerRunsTheEvaluationInTheHarnessesLayout) {
  const a2apb::Task done = Evaluate("Please evaluate arvo:14368 now.", "ctx-arvo-1");
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED) << done.DebugString();
  EXPECT_NE(StatusText(done).find("\"score\":1.0000"), std::string::npos) << StatusText(done);

  const std::string workspace = dir_.Sub("workspaces") + "/arvo_14368-purple/workspace";
  EXPECT_TRUE(fs::exists(workspace + "/src-vul/record.c"));
  EXPECT_TRUE(fs::exists(workspace + "/14368_error.txt"));
  EXPECT_TRUE(fs::exists(workspace + "/shared/loc.json"));
  v1::GetContextRequest get;
  get.set_context_id("ctx-arvo-1");
  v1::TaskContext context;
  ASSERT_TRUE(contexts_->GetContext(Ctx().get(), get, &context).ok());
  EXPECT_EQ(context.workspace_dir(), workspace);
  EXPECT_EQ(context.external_task_id(), "14368");
  EXPECT_EQ(context.labels().at("arvo_id"), "14368");
  EXPECT_EQ(context.command_count(), 3);

  // The same task for the same agent again, in another context: the ended evaluation's
  // workspace is not reused as it was (its answer is gone before the new one starts).
  std::ofstream(workspace + "/leftover.txt") << "from the first evaluation";
  const a2apb::Task again = Evaluate("arvo:14368", "ctx-arvo-2");
  ASSERT_EQ(again.status().state(), a2apb::TASK_STATE_COMPLETED) << again.DebugString();
  EXPECT_NE(StatusText(again).find("\"score\":1.0000"), std::string::npos) << StatusText(again);
  EXPECT_FALSE(fs::exists(workspace + "/leftover.txt"));
}

TEST_F(ArvoLayoutTest, AnUnknownArvoNumberIsAClearError) {
  const a2apb::Task done = Evaluate("arvo:99999", "ctx-arvo-missing");
  EXPECT_NE(done.status().state(), a2apb::TASK_STATE_COMPLETED) << done.DebugString();
  EXPECT_NE(StatusText(done).find("unknown task id \"99999\""), std::string::npos)
      << StatusText(done);
}

}  // namespace
