#include "a2a_http/http.h"

#include <sys/socket.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/http_deadline.h"
#include "common/metrics.h"
#include "httplib.h"

namespace a2a_http {
namespace {

constexpr char kMetricsPath[] = "/metrics";
// Connections the kernel may hold for the server before it accepts them. Debian's httplib is
// built with a backlog of 5: a burst of clients connecting at once (64 keep-alive streams)
// overflows it, their handshakes are dropped and retried a second later, and some connections
// are reset after the request went out (bench/analysis.md, W5 over JSON-RPC).
constexpr int kListenBacklog = 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen, const std::function<void(httplib::Server&)>& install,
    const HttpServerOptions& options) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_listen \"", listen, "\" is not host:port"));
  }
  if (options.threads < 1) {
    return absl::InvalidArgumentError("--http_threads must be at least 1");
  }
  std::string host = listen.substr(0, colon);
  std::unique_ptr<HttpServer> server(new HttpServer());
  const HttpTlsFiles& tls = options.tls;
  if (tls.cert_file.empty()) {
    server->server_ = std::make_unique<httplib::Server>();
  } else {
    auto https = std::make_unique<httplib::SSLServer>(tls.cert_file.c_str(), tls.key_file.c_str());
    if (!https->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot serve HTTPS with certificate ",
                                                     tls.cert_file, " and key ", tls.key_file));
    }
    server->server_ = std::move(https);
    server->tls_ = true;
  }
  const int threads = options.threads;
  server->server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server->server_->set_payload_max_length(options.max_body_bytes);
  // An answer goes out as two writes (headers, body): without TCP_NODELAY the body waits for the
  // client's delayed ACK, about 40 ms per call (bench/analysis.md, W5 over JSON-RPC).
  server->server_->set_tcp_nodelay(true);
  // httplib closes a keep-alive connection after 5 requests by default; clients that call in a
  // loop then reconnect all the time, and with httplib's short listen backlog some connection
  // attempts are dropped and retried a second later.
  server->server_->set_keep_alive_max_count(10000);
  // A request with neither Content-Length nor chunked Transfer-Encoding has no body (RFC 9112,
  // 6.3), but httplib 0.11 reads a POST's or DELETE's body until the connection closes: `curl -X
  // POST .../tasks/t:cancel` would wait out the read timeout and get a bare 400. Saying so in the
  // header before httplib reads the body makes it read none. (The request object is httplib's
  // own, not const; only the handler's view of it is.)
  server->server_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Prometheus text exposition of the process's metrics (common/metrics.h).
  server->server_->Get(kMetricsPath, [](const httplib::Request&, httplib::Response& res) {
    res.set_content(common::MetricsRegistry::Default().Render(),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  if (install) install(*server->server_);
  // The listening socket, to widen its backlog once httplib listens on it (listen() again on a
  // listening socket sets the new backlog), with SO_REUSEADDR only: httplib's default options add
  // SO_REUSEPORT, with which a second server binds a port another one holds and the two share
  // its connections, where "in use" is the answer.
  auto listen_fd = std::make_shared<int>(-1);
  server->server_->set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listen_fd = sock;  // the last socket tried is the one bound
  });
  if (port == 0) {
    server->port_ = server->server_->bind_to_any_port(host);
  } else if (server->server_->bind_to_port(host, port)) {
    server->port_ = port;
  }
  if (server->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", listen));
  }
  if (*listen_fd >= 0 && ::listen(*listen_fd, kListenBacklog) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", listen, " with a backlog of ", kListenBacklog));
  }
  httplib::Server* raw = server->server_.get();
  server->thread_ = std::thread([raw, returned = server->listen_returned_] {
    raw->listen_after_bind();
    returned->store(true);
  });
  return server;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (server_ == nullptr || !thread_.joinable()) return;
  // httplib 0.11 ignores a stop() that arrives before its listen loop is running, and the loop
  // would then never end: wait until it runs (or has already returned) before stopping it.
  while (!server_->is_running() && !listen_returned_->load()) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  server_->stop();
  thread_.join();
}

namespace {

// Splits "http://host:port/path" into the scheme-host-port part and the path.
std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (path_start == std::string::npos) return {url, "/"};
  return {url.substr(0, path_start), url.substr(path_start)};
}

void SetTimeouts(httplib::Client& client, absl::Duration timeout) {
  const auto micros = absl::ToInt64Microseconds(timeout);
  client.set_connection_timeout(micros / 1000000, micros % 1000000);
  client.set_read_timeout(micros / 1000000, micros % 1000000);
  client.set_write_timeout(micros / 1000000, micros % 1000000);
}

}  // namespace

absl::StatusOr<std::string> HttpGet(const std::string& url, absl::Duration timeout) {
  auto [base, path] = SplitUrl(url);
  httplib::Client client(base);
  SetTimeouts(client, timeout);
  httplib::Result res = client.Get(path);
  if (!res) {
    return absl::UnavailableError(absl::StrCat("GET ", url, ": ", httplib::to_string(res.error())));
  }
  if (res->status < 200 || res->status >= 300) {
    return absl::UnavailableError(absl::StrCat("GET ", url, ": HTTP ", res->status));
  }
  return res->body;
}

absl::StatusOr<std::string> HttpGet(const std::string& url, const HttpGetOptions& options) {
  if (!absl::StartsWith(url, "http://") && !absl::StartsWith(url, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" is not an http(s) URL"));
  }
  const std::pair<std::string, std::string> split = SplitUrl(url);
  httplib::Client client(split.first);
  client.set_follow_location(false);
  httplib::Headers headers;
  for (const auto& [name, value] : options.headers) headers.emplace(name, value);
  std::string body;
  bool too_large = false;
  bool expired = false;
  httplib::Result res = common::CallWithDeadline(
      client, options.timeout,
      [&] {
        return client.Get(split.second, headers, [&](const char* data, size_t length) {
          if (body.size() + length > options.max_bytes) {
            too_large = true;
            return false;
          }
          body.append(data, length);
          return true;
        });
      },
      &expired);
  if (too_large) {
    return absl::ResourceExhaustedError(
        absl::StrCat("GET ", url, ": the answer is larger than ", options.max_bytes, " bytes"));
  }
  if (!res) {
    return absl::UnavailableError(
        expired ? absl::StrCat("GET ", url, ": no answer within ",
                               absl::FormatDuration(options.timeout))
                : absl::StrCat("GET ", url, ": ", httplib::to_string(res.error())));
  }
  const int status = res->status;
  if (status >= 200 && status < 300) return body;
  const std::string what = absl::StrCat("GET ", url, ": HTTP ", status);
  if (status >= 500 || status == 408 || status == 429) return absl::UnavailableError(what);
  if (status >= 300 && status < 400) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " (redirects are not followed; give the final URL)"));
  }
  return absl::FailedPreconditionError(what);
}

HttpPostResult HttpPost(const std::string& url, const std::string& body,
                        const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        absl::Duration timeout) {
  HttpPostResult result;
  if (!absl::StartsWith(url, "http://") && !absl::StartsWith(url, "https://")) {
    result.error = "only http:// and https:// webhook URLs are supported";
    return result;
  }
  // Named, not structured bindings: the lambda below captures `path`, which clang before 16
  // refuses for a binding (the COORD_FUZZ build uses clang 14).
  const std::pair<std::string, std::string> split = SplitUrl(url);
  const std::string& base = split.first;
  const std::string& path = split.second;
  httplib::Client client(base);
  httplib::Headers h;
  for (const auto& [name, value] : headers) h.emplace(name, value);
  // `timeout` bounds the whole call, not only each read (a webhook could trickle its answer).
  bool expired = false;
  httplib::Result res = common::CallWithDeadline(
      client, timeout, [&] { return client.Post(path, h, body, content_type); }, &expired);
  if (!res) {
    result.error = expired ? absl::StrCat("no answer within ", absl::FormatDuration(timeout),
                                          " (--a2a_push_timeout)")
                           : absl::StrCat("no answer: ", httplib::to_string(res.error()));
    return result;
  }
  result.status = res->status;
  return result;
}

}  // namespace a2a_http
