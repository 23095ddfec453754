#include "coordinator/a2a/http.h"

#include <string>

#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

void FixedCard(httplib::Server& server) {
  server.Get("/.well-known/agent-card.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"coordinator"})", "application/json");
  });
}

// httplib 0.11 drops a stop() that comes before its listen loop runs; Stop must not hang then.
TEST(HttpServerTest, StopRightAfterStartReturns) {
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start("127.0.0.1:0", FixedCard);
    ASSERT_OK(server);
    (*server)->Stop();
  }
}

TEST(HttpServerTest, ServesTheCardAndStops) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start("127.0.0.1:0", FixedCard);
  ASSERT_OK(server);
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Result res = client.Get("/.well-known/agent-card.json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"({"name":"coordinator"})");
  // /metrics is always there.
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  (*server)->Stop();
  (*server)->Stop();  // idempotent
}

TEST(HttpServerTest, MalformedAddressIsRefused) {
  EXPECT_EQ(HttpServer::Start("no-port", FixedCard).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Start("127.0.0.1:99999", FixedCard).status().code(),
            absl::StatusCode::kInvalidArgument);
  HttpServerOptions no_threads;
  no_threads.threads = 0;
  EXPECT_EQ(HttpServer::Start("127.0.0.1:0", FixedCard, no_threads).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordinator
