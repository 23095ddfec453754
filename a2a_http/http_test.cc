#include "a2a_http/http.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/test_util.h"

namespace a2a_http {
namespace {

void FixedCard(httplib::Server& server) {
  server.Get("/.well-known/agent-card.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"coordinator"})", "application/json");
  });
}

// The backlog of the TCP socket listening on 127.0.0.1:`port`, as the kernel's sock_diag
// reports it (what `ss -ltn` shows as Send-Q). -1 when no such socket was found.
int64_t ListenBacklog(int port) {
  const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return -1;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } query = {};
  query.header.nlmsg_len = sizeof(query);
  query.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  query.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  query.request.sdiag_family = AF_INET;
  query.request.sdiag_protocol = IPPROTO_TCP;
  query.request.idiag_states = 1u << TCP_LISTEN;
  int64_t backlog = -1;
  if (::send(fd, &query, sizeof(query), 0) == static_cast<ssize_t>(sizeof(query))) {
    alignas(nlmsghdr) char buffer[32768];
    bool done = false;
    while (!done) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left);
           h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        const auto* socket = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        if (ntohs(socket->id.idiag_sport) == port) backlog = socket->idiag_wqueue;
      }
    }
  }
  ::close(fd);
  return backlog;
}

// Debian's httplib listens with a backlog of 5; the server widens it, so that a burst of
// clients connecting at once is not dropped (and retried a second later).
TEST(HttpServerTest, ListensWithAWideBacklog) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start("127.0.0.1:0", FixedCard);
  ASSERT_OK(server);
  EXPECT_EQ(ListenBacklog((*server)->port()), 1024);
  // A burst of connections, all served.
  std::vector<std::unique_ptr<httplib::Client>> clients;
  for (int i = 0; i < 64; ++i) {
    clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", (*server)->port()));
  }
  for (auto& client : clients) {
    httplib::Result card = client->Get("/.well-known/agent-card.json");
    ASSERT_TRUE(card);
    EXPECT_EQ(card->status, 200);
  }
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

// Sends `request` as raw bytes (what a client without a body helper, such as `curl -X POST`,
// sends) and returns the whole answer (the server closes: Connection: close).
std::string RawExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) answer.append(buffer, n);
  close(fd);
  return answer;
}

// RFC 9112 6.3: a request with neither Content-Length nor Transfer-Encoding has no body. The
// server answers it at once, as a request with an empty body, instead of reading until the
// connection closes and answering 400.
TEST(HttpServerTest, APostWithoutLengthHasAnEmptyBody) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start("127.0.0.1:0", [](httplib::Server& http) {
        http.Post("/size", [](const httplib::Request& req, httplib::Response& res) {
          res.set_content("body of " + std::to_string(req.body.size()), "text/plain");
        });
      });
  ASSERT_OK(server);
  const int port = (*server)->port();
  const std::string bare =
      RawExchange(port, "POST /size HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(bare, "HTTP/1.1 200")) << bare;
  EXPECT_TRUE(absl::EndsWith(bare, "body of 0")) << bare;
  // A body with a length, and a chunked one, still arrive whole.
  const std::string sized = RawExchange(port,
                                        "POST /size HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: "
                                        "close\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(absl::EndsWith(sized, "body of 3")) << sized;
  const std::string chunked = RawExchange(
      port,
      "POST /size HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: "
      "chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n");
  EXPECT_TRUE(absl::EndsWith(chunked, "body of 4")) << chunked;
  (*server)->Stop();
}

// A port another server holds is refused, not shared (httplib's default SO_REUSEPORT would let
// both bind it and split its connections).
TEST(HttpServerTest, APortInUseIsRefused) {
  absl::StatusOr<std::unique_ptr<HttpServer>> first = HttpServer::Start("127.0.0.1:0", nullptr);
  ASSERT_OK(first);
  const std::string taken = absl::StrCat("127.0.0.1:", (*first)->port());
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Start(taken, nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(second.status().message(), taken)) << second.status();
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
}  // namespace a2a_http
