// The coordinator's HTTP side, on cpp-httplib (the project's one HTTP library): the server of the
// HTTP port, and the client calls (webhooks, agent cards). The large header is compiled here, in
// http_bindings.cc and in http_transport.cc (the streaming calls to JSON-RPC and REST agents) only.
#ifndef A2A_HTTP_HTTP_H_
#define A2A_HTTP_HTTP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace a2a_http {

// Certificate chain and private key (PEM files) for serving HTTPS; both empty means plain HTTP.
struct HttpTlsFiles {
  std::string cert_file;
  std::string key_file;
};

// The coordinator's HTTP port: /metrics, and whatever `install` adds (the A2A JSON bindings and
// the agent cards, http_bindings.h).
struct HttpServerOptions {
  // Connections served at once, each on a thread of its own: an event stream holds one for its
  // whole life, a blocking SendMessage until its task stops (--http_threads, default 64). More
  // connections wait for a free thread.
  int threads = 64;
  // Largest request body; a larger one gets 413 (--max_request_bytes).
  size_t max_body_bytes = 4 << 20;
  HttpTlsFiles tls;
};

class HttpServer {
 public:
  // Binds `listen` (host:port; port 0 picks one) and serves on threads of its own, over TLS
  // (HTTPS only; a plain HTTP request gets no answer) when `options.tls` names a certificate and
  // key. `install` adds routes before the first request can arrive.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, const std::function<void(httplib::Server&)>& install,
      const HttpServerOptions& options = {});
  ~HttpServer();

  int port() const { return port_; }
  bool tls() const { return tls_; }
  void Stop();

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  // Set by thread_ once httplib's listen loop has returned (so Stop need not wait for it).
  std::shared_ptr<std::atomic<bool>> listen_returned_ = std::make_shared<std::atomic<bool>>(false);
  int port_ = 0;
  bool tls_ = false;
};

// What one POST got: the HTTP status (0 when no answer came) and, without an answer, why.
struct HttpPostResult {
  int status = 0;
  std::string error;
};

// GETs `url`; the body of a 2xx answer, else UNAVAILABLE.
[[nodiscard]] absl::StatusOr<std::string> HttpGet(const std::string& url, absl::Duration timeout);

// How HttpGet with options fetches.
struct HttpGetOptions {
  // Deadline of the whole call, not only of each read (default 10s).
  absl::Duration timeout = absl::Seconds(10);
  // Largest body accepted (default 1 MiB); reading stops as soon as a body is larger.
  size_t max_bytes = 1 << 20;
  // Request headers (default none).
  std::vector<std::pair<std::string, std::string>> headers;
};

// GETs `url` (http:// or https://; a redirect is not followed) and returns the body of a 2xx
// answer. UNAVAILABLE when no answer came (refused, unreachable, no answer within the timeout)
// or the answer is a 5xx, 408 or 429 (worth trying again); FAILED_PRECONDITION for any other
// status; RESOURCE_EXHAUSTED when the body is larger than `max_bytes`; INVALID_ARGUMENT for a
// URL that is not http(s).
[[nodiscard]] absl::StatusOr<std::string> HttpGet(const std::string& url,
                                                  const HttpGetOptions& options);

// POSTs `body` to `url` (http:// or https://) with `headers`, waiting at most `timeout`.
HttpPostResult HttpPost(const std::string& url, const std::string& body,
                        const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        absl::Duration timeout);

}  // namespace a2a_http

#endif  // A2A_HTTP_HTTP_H_
