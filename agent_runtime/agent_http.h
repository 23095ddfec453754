// An agent's HTTP port, as evaluation platforms run agents (`--host`, `--port`, `--card-url`):
// its card at /.well-known/agent-card.json and the A2A JSON-RPC (1.0 and 0.3) and HTTP+JSON
// bindings at the root, transcoded onto the agent's own gRPC service through an in-process channel
// (a2a_http/bindings.h), so every binding behaves as the gRPC one does.
#ifndef AGENT_RUNTIME_AGENT_HTTP_H_
#define AGENT_RUNTIME_AGENT_HTTP_H_

#include <memory>
#include <optional>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_http/bindings.h"
#include "a2a_http/http.h"
#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace agent_runtime {

// `card` with the interfaces of the HTTP port at `url`: JSON-RPC and HTTP+JSON in A2A 1.0, then
// JSON-RPC in 0.3 (what a 0.3 reader's `url` and `preferredTransport` name). Any interfaces the
// card had are replaced: they named other addresses.
::lf::a2a::v1::AgentCard CardAt(::lf::a2a::v1::AgentCard card, const std::string& url);

class AgentHttp {
 public:
  // Serves on `listen` (host:port; port 0 picks one). `card_url` is the URL the card names; empty:
  // the address each reader used (http://<its Host header>/). `channel` reaches the agent's gRPC
  // service.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AgentHttp>> Start(
      const std::string& listen, std::string card_url, ::lf::a2a::v1::AgentCard card,
      std::shared_ptr<grpc::Channel> channel);
  ~AgentHttp();

  int port() const { return server_->port(); }
  // Stops serving; open event streams end. Idempotent.
  void Stop();

 private:
  class Cards final : public a2a_http::CardSource {
   public:
    Cards(std::string card_url, ::lf::a2a::v1::AgentCard card)
        : card_url_(std::move(card_url)), card_(std::move(card)) {}
    absl::StatusOr<::lf::a2a::v1::AgentCard> Card(const std::optional<std::string>& agent,
                                                  const std::string& base_url) override;

   private:
    const std::string card_url_;
    const ::lf::a2a::v1::AgentCard card_;
  };

  AgentHttp() = default;
  std::unique_ptr<Cards> cards_;
  std::unique_ptr<a2a_http::A2AHttpBindings> bindings_;
  std::unique_ptr<a2a_http::HttpServer> server_;
};

}  // namespace agent_runtime

#endif  // AGENT_RUNTIME_AGENT_HTTP_H_
