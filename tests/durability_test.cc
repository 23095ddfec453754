// Guarantee 1 of DESIGN.md, end to end: every write the real coordctl saw acknowledged by the
// real coordinator survives `kill -9` of the coordinator.
#include <signal.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;

constexpr int kContexts = 10;
constexpr int kCommands = 1000;
constexpr int kMessages = 30;
constexpr int kWorkers = 4;  // coordctl processes running at once

std::string ContextId(int i) { return absl::StrCat("eval-", i); }

TEST(DurabilityTest, AcknowledgedWritesSurviveKillDashNine) {
  TempDir dir;
  const std::string data_dir = dir.Sub("data");
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(data_dir);
  ASSERT_OK(coordinator);
  const std::string target = (*coordinator)->target();

  for (int i = 0; i < kContexts; ++i) {
    absl::StatusOr<ProcessResult> put =
        RunCoordctl(target, {"context", "put", ContextId(i), "--agent", "green", "--set",
                             absl::StrCat("workspace_dir=/work/", i), "--set", "suite=durability"});
    ASSERT_OK(put);
    ASSERT_EQ(put->exit_code, 0) << put->Describe();
  }

  // What coordctl saw acknowledged (exit 0), per context: command -> exit code.
  absl::Mutex mu;
  std::map<std::string, std::map<std::string, int>> acked;
  std::vector<std::string> failures;
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      for (int k = next++; k < kCommands; k = next++) {
        const std::string id = ContextId(k % kContexts);
        const std::string command = absl::StrCat("run step ", k);
        const int exit_code = k % 7 == 0 ? 1 : 0;
        absl::StatusOr<ProcessResult> r =
            RunCoordctl(target, {"context", "command", id, "--exit-code", absl::StrCat(exit_code),
                                 "--", "run", "step", absl::StrCat(k)});
        absl::MutexLock lock(&mu);
        if (r.ok() && r->exit_code == 0) {
          acked[id][command] = exit_code;
        } else {
          failures.push_back(r.ok() ? r->Describe() : std::string(r.status().message()));
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  // The coordinator was up the whole time: every call must have been acknowledged.
  ASSERT_TRUE(failures.empty()) << failures.size() << " failed; first: " << failures[0];

  for (int m = 1; m <= kMessages; ++m) {
    absl::StatusOr<ProcessResult> r =
        RunCoordctl(target, {"convo", "append", ContextId(0), "--role", m % 2 ? "agent" : "user",
                             "--tokens", absl::StrCat(m), "message", absl::StrCat(m)});
    ASSERT_OK(r);
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
  }

  // No shutdown, no flush: the process just disappears.
  absl::StatusOr<ProcessResult> killed = (*coordinator)->Kill();
  ASSERT_OK(killed);
  EXPECT_EQ(killed->term_signal, SIGKILL) << killed->Describe();
  coordinator->reset();

  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> restarted =
      CoordinatorProcess::Start(data_dir);
  ASSERT_OK(restarted);
  auto channel = grpc::CreateChannel((*restarted)->target(), grpc::InsecureChannelCredentials());
  auto contexts = coordinator::v1::ContextService::NewStub(channel);
  auto conversations = coordinator::v1::ConversationService::NewStub(channel);
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(60); };

  int total = 0;
  for (int i = 0; i < kContexts; ++i) {
    const std::string id = ContextId(i);
    SCOPED_TRACE(id);
    const std::map<std::string, int>& expected = acked[id];
    int expected_failed = 0;
    for (const auto& [command, code] : expected) expected_failed += code != 0;

    grpc::ClientContext get_context;
    get_context.set_deadline(deadline());
    coordinator::v1::GetContextRequest get;
    get.set_context_id(id);
    coordinator::v1::TaskContext context;
    grpc::Status s = contexts->GetContext(&get_context, get, &context);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(context.agent(), "green");
    EXPECT_EQ(context.workspace_dir(), absl::StrCat("/work/", i));
    EXPECT_EQ(context.labels().at("suite"), "durability");
    EXPECT_EQ(context.command_count(), static_cast<int64_t>(expected.size()));
    EXPECT_EQ(context.failed_commands(), expected_failed);

    grpc::ClientContext list_context;
    list_context.set_deadline(deadline());
    coordinator::v1::ListCommandsRequest list;
    list.set_context_id(id);
    list.set_page_size(1000);
    coordinator::v1::ListCommandsResponse listed;
    s = contexts->ListCommands(&list_context, list, &listed);
    ASSERT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, int> found;
    for (const auto& record : listed.commands()) found[record.command()] = record.exit_code();
    EXPECT_EQ(found, expected);
    total += listed.commands_size();
  }
  EXPECT_EQ(total, kCommands);

  grpc::ClientContext convo_context;
  convo_context.set_deadline(deadline());
  coordinator::v1::GetConversationRequest convo;
  convo.set_context_id(ContextId(0));
  coordinator::v1::GetConversationResponse messages;
  grpc::Status s = conversations->GetConversation(&convo_context, convo, &messages);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(messages.message_count(), kMessages);
  EXPECT_EQ(messages.total_tokens(), kMessages * (kMessages + 1) / 2);
  ASSERT_EQ(messages.messages_size(), kMessages);
  for (int m = 1; m <= kMessages; ++m) {
    EXPECT_EQ(messages.messages(m - 1).text(), absl::StrCat("message ", m));
  }
}

}  // namespace
