// The coordinator's HTTP side, on cpp-httplib (the project's one HTTP library): the server that
// publishes the agent card, and the client that POSTs webhook calls. Kept in one file so the
// large header is compiled once.
#ifndef COORDINATOR_A2A_HTTP_H_
#define COORDINATOR_A2A_HTTP_H_

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

namespace coordinator {

// Certificate chain and private key (PEM files) for serving HTTPS; both empty means plain HTTP.
struct HttpTlsFiles {
  std::string cert_file;
  std::string key_file;
};

// Serves GET /.well-known/agent-card.json with the JSON `card_json` returns at that moment.
class AgentCardHttpServer {
 public:
  // Binds `listen` (host:port; port 0 picks one) and serves on a thread of its own, over TLS
  // (HTTPS only; a plain HTTP request gets no answer) when `tls` names a certificate and key.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AgentCardHttpServer>> Start(
      const std::string& listen, std::function<absl::StatusOr<std::string>()> card_json,
      const HttpTlsFiles& tls = {});
  ~AgentCardHttpServer();

  int port() const { return port_; }
  void Stop();

 private:
  AgentCardHttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  // Set by thread_ once httplib's listen loop has returned (so Stop need not wait for it).
  std::shared_ptr<std::atomic<bool>> listen_returned_ = std::make_shared<std::atomic<bool>>(false);
  int port_ = 0;
};

// What one POST got: the HTTP status (0 when no answer came) and, without an answer, why.
struct HttpPostResult {
  int status = 0;
  std::string error;
};

// GETs `url`; the body of a 2xx answer, else UNAVAILABLE.
[[nodiscard]] absl::StatusOr<std::string> HttpGet(const std::string& url, absl::Duration timeout);

// POSTs `body` to `url` (http:// or https://) with `headers`, waiting at most `timeout`.
HttpPostResult HttpPost(const std::string& url, const std::string& body,
                        const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        absl::Duration timeout);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_HTTP_H_
