#include "coordinator/a2a/http.h"

#include <string>

#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

absl::StatusOr<std::string> FixedCard() { return std::string(R"({"name":"coordinator"})"); }

// httplib 0.11 drops a stop() that comes before its listen loop runs; Stop must not hang then.
TEST(AgentCardHttpServerTest, StopRightAfterStartReturns) {
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<std::unique_ptr<AgentCardHttpServer>> server =
        AgentCardHttpServer::Start("127.0.0.1:0", FixedCard);
    ASSERT_OK(server);
    (*server)->Stop();
  }
}

TEST(AgentCardHttpServerTest, ServesTheCardAndStops) {
  absl::StatusOr<std::unique_ptr<AgentCardHttpServer>> server =
      AgentCardHttpServer::Start("127.0.0.1:0", FixedCard);
  ASSERT_OK(server);
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Result res = client.Get("/.well-known/agent-card.json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"name":"coordinator"})");
  (*server)->Stop();
  (*server)->Stop();  // idempotent
}

TEST(AgentCardHttpServerTest, MalformedAddressIsRefused) {
  EXPECT_EQ(AgentCardHttpServer::Start("no-port", FixedCard).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AgentCardHttpServer::Start("127.0.0.1:99999", FixedCard).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordinator
