// The a2a-version metadata: which values a server accepts (absent, empty, "1.0", "1"), what it
// answers to another one, which value counts when the key is repeated, and a real call that
// carries what AddVersion stamps.
#include "a2a_protocol/version.h"

#include <memory>
#include <string>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/grpc_errors.h"
#include "common/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace a2a_protocol {
namespace {

namespace a2apb = ::lf::a2a::v1;

// string_ref does not own its bytes: every value below is a literal.
ClientMetadata With(std::initializer_list<std::pair<const char*, const char*>> entries) {
  ClientMetadata metadata;
  for (const auto& [key, value] : entries) metadata.emplace(key, value);
  return metadata;
}

TEST(CheckVersionTest, AbsentEmptyAndOneAreAccepted) {
  EXPECT_OK(CheckVersion(With({}), "server"));
  EXPECT_OK(CheckVersion(With({{"authorization", "Bearer x"}}), "server"));
  EXPECT_OK(CheckVersion(With({{"a2a-version", ""}}), "server"));
  EXPECT_OK(CheckVersion(With({{"a2a-version", "1.0"}}), "server"));
  EXPECT_OK(CheckVersion(With({{"a2a-version", "1"}}), "server"));
  EXPECT_OK(CheckVersion(With({{"a2a-version", "1.0.1"}}), "server"));  // a patch number
  EXPECT_FALSE(CheckVersion(With({{"a2a-version", "1.01"}}), "server").ok());
}

TEST(CheckVersionTest, AnotherVersionIsVersionNotSupported) {
  const absl::Status s = CheckVersion(With({{"a2a-version", "0.3"}}), "server");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Reason(s), kVersionNotSupported);
  EXPECT_EQ(s.message(), "A2A version \"0.3\" is not supported; this server speaks 1.0");
  EXPECT_EQ(CheckVersion(With({{"a2a-version", "2.0"}}), "agent").message(),
            "A2A version \"2.0\" is not supported; this agent speaks 1.0");
  EXPECT_EQ(Reason(CheckVersion(With({{"a2a-version", "1.1"}}), "server")), kVersionNotSupported);
}

TEST(CheckVersionTest, WhenRepeatedTheFirstValueCounts) {
  EXPECT_OK(CheckVersion(With({{"a2a-version", "1.0"}, {"a2a-version", "0.3"}}), "server"));
  EXPECT_EQ(Reason(CheckVersion(With({{"a2a-version", "0.3"}, {"a2a-version", "1.0"}}), "server")),
            kVersionNotSupported);
  // Neighbouring keys do not confuse the lookup.
  EXPECT_OK(CheckVersion(With({{"a2a-version-x", "0.3"}, {"a2a", "0.3"}}), "server"));
}

// An A2A service whose GetExtendedAgentCard answers with the version check of the call.
class VersionEcho final : public a2apb::A2AService::CallbackService {
 public:
  grpc::ServerUnaryReactor* GetExtendedAgentCard(grpc::CallbackServerContext* context,
                                                 const a2apb::GetExtendedAgentCardRequest*,
                                                 a2apb::AgentCard*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(common::ToGrpcStatus(CheckVersion(context->client_metadata(), "server")));
    return reactor;
  }
};

class VersionCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    stub_ = a2apb::A2AService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                           grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  absl::Status Call(grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    a2apb::AgentCard card;
    return FromGrpcStatus(stub_->GetExtendedAgentCard(context, {}, &card));
  }

  VersionEcho service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
};

TEST_F(VersionCallTest, AStampedCallIsAccepted) {
  grpc::ClientContext context;
  AddVersion(&context);
  EXPECT_OK(Call(&context));
}

TEST_F(VersionCallTest, AnUnstampedCallIsAccepted) {
  grpc::ClientContext context;
  EXPECT_OK(Call(&context));
}

TEST_F(VersionCallTest, AnOldVersionIsRefusedWithItsReasonOnTheWire) {
  grpc::ClientContext context;
  context.AddMetadata(kVersionHeader, "0.3");
  const absl::Status s = Call(&context);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Reason(s), kVersionNotSupported);
}

TEST_F(VersionCallTest, ARepeatedHeaderArrivesInOrderAndTheFirstCounts) {
  grpc::ClientContext accepted;
  AddVersion(&accepted);
  accepted.AddMetadata(kVersionHeader, "0.3");
  EXPECT_OK(Call(&accepted));

  grpc::ClientContext refused;
  refused.AddMetadata(kVersionHeader, "0.3");
  AddVersion(&refused);
  EXPECT_EQ(Reason(Call(&refused)), kVersionNotSupported);
}

}  // namespace
}  // namespace a2a_protocol
