// The console's JSON errors on a real httplib server, without stores: what is refused before
// any store is read (query parameters) needs none.
#include "coordinator/console/console.h"

#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    console_.Install(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    client.set_url_encode(false);
    return client.Get(path);
  }

  Console console_{ConsoleParts{}};
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// Found by fuzz_console: a parameter name that is not UTF-8, echoed in the error, lost its bad
// bytes silently (and Protobuf logged an error for each request).
TEST_F(ConsoleTest, AParameterNameThatIsNotUtf8IsEchoedWithReplacementCharacters) {
  httplib::Result res = Get("/console/api/overview?b%FFd=1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_THAT(res->body, HasSubstr("unknown query parameter"));
  // U+FFFD, escaped as common::JsonQuote writes it.
  EXPECT_THAT(res->body, HasSubstr(R"(b\\ufffdd)"));
  EXPECT_THAT(res->body, Not(HasSubstr("\xff")));
}

}  // namespace
}  // namespace coordinator
