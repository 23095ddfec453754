// An agent that streams the way agents on the official A2A JavaScript SDK do (found by the
// interop tests, tests/interop/): on a follow-up turn its stream opens with the task as the agent
// stored it, still INPUT_REQUIRED, before the WORKING and COMPLETED updates for the new message.
// The coordinator must not take that stale opening status as the answer to the follow-up.
#include <memory>
#include <string>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/a2a_test_util.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using testing_util::TempDir;
using ::testing_util::TextOf;

constexpr char kSdkTaskId[] = "sdk-task-1";

// First turn: SUBMITTED, then INPUT_REQUIRED. Follow-ups open with the stored task (status
// INPUT_REQUIRED, its old question) and then: "again" ends there (the snapshot is the answer);
// anything else goes WORKING and COMPLETED with "done: <text>".
class SdkStyleAgent final : public a2apb::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(grpc::ServerContext* /*context*/,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    const a2apb::Message& message = request->message();
    const std::string context_id = message.context_id();
    a2apb::StreamResponse opening;
    a2apb::Task* task = opening.mutable_task();
    task->set_id(kSdkTaskId);
    task->set_context_id(context_id);
    if (message.task_id().empty()) {
      task->mutable_status()->set_state(a2apb::TASK_STATE_SUBMITTED);
      writer->Write(opening);
      writer->Write(Status(context_id, a2apb::TASK_STATE_INPUT_REQUIRED, "say more"));
      return grpc::Status::OK;
    }
    if (message.task_id() != kSdkTaskId) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown task " + message.task_id());
    }
    task->mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
    task->mutable_status()->mutable_message()->add_parts()->set_text("say more");
    writer->Write(opening);
    if (TextOf(message) == "again") return grpc::Status::OK;
    writer->Write(Status(context_id, a2apb::TASK_STATE_WORKING, ""));
    writer->Write(Status(context_id, a2apb::TASK_STATE_COMPLETED, "done: " + TextOf(message)));
    return grpc::Status::OK;
  }

 private:
  static a2apb::StreamResponse Status(const std::string& context_id, a2apb::TaskState state,
                                      const std::string& text) {
    a2apb::StreamResponse response;
    a2apb::TaskStatusUpdateEvent* update = response.mutable_status_update();
    update->set_task_id(kSdkTaskId);
    update->set_context_id(context_id);
    update->mutable_status()->set_state(state);
    if (!text.empty()) {
      a2apb::Message* m = update->mutable_status()->mutable_message();
      m->set_message_id("agent-" + text);
      m->set_role(a2apb::ROLE_AGENT);
      m->add_parts()->set_text(text);
    }
    return response;
  }
};

class SdkStyleAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&agent_);
    agent_server_ = builder.BuildAndStart();
    ASSERT_NE(agent_server_, nullptr);
    ASSERT_NE(port, 0);

    absl::StatusOr<ServerOptions> options = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(options);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(*options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = a2apb::A2AService::NewStub(channel_);

    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name("sdk");
    reg.mutable_agent()->set_endpoint("127.0.0.1:" + std::to_string(port));
    coordinator::v1::Agent registered;
    grpc::ClientContext context;
    ASSERT_TRUE(registry->RegisterAgent(&context, reg, &registered).ok());
  }

  void TearDown() override {
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    if (agent_server_ != nullptr) agent_server_->Shutdown();
  }

  // A blocking send (bounded by a deadline) of `text`, continuing `task_id` when given.
  a2apb::Task Send(const std::string& text, const std::string& task_id = "") {
    a2apb::SendMessageRequest request;
    request.set_tenant("sdk");
    a2apb::Message* m = request.mutable_message();
    m->set_message_id("m-" + std::to_string(++counter_));
    m->set_role(a2apb::ROLE_USER);
    m->set_task_id(task_id);
    m->add_parts()->set_text(text);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    a2a_protocol::AddVersion(&context);
    a2apb::SendMessageResponse response;
    grpc::Status s = stub_->SendMessage(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    return response.task();
  }

  TempDir dir_;
  SdkStyleAgent agent_;
  std::unique_ptr<grpc::Server> agent_server_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
  int counter_ = 0;
};

TEST_F(SdkStyleAgentTest, StaleOpeningSnapshotOfAFollowUpIsNotItsAnswer) {
  const a2apb::Task first = Send("start");
  ASSERT_EQ(first.status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  const a2apb::Task second = Send("finish", first.id());
  EXPECT_EQ(second.id(), first.id());
  ASSERT_EQ(second.status().state(), a2apb::TASK_STATE_COMPLETED);
  ASSERT_GT(second.status().message().parts_size(), 0);
  EXPECT_EQ(second.status().message().parts(0).text(), "done: finish");
}

TEST_F(SdkStyleAgentTest, OpeningSnapshotThatEndsTheStreamIsTheAnswer) {
  const a2apb::Task first = Send("start");
  ASSERT_EQ(first.status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  const a2apb::Task again = Send("again", first.id());
  ASSERT_EQ(again.status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  const a2apb::Task last = Send("finish", first.id());
  ASSERT_EQ(last.status().state(), a2apb::TASK_STATE_COMPLETED);
}

}  // namespace
}  // namespace coordinator
