// The A2A JSON-RPC and HTTP+JSON (REST) bindings in front of a gRPC A2A service, and the agent
// cards served beside them: the coordinator's HTTP port, and the --port of our agents.
//
// One implementation behind three bindings: an HTTP request is transcoded to the
// lf.a2a.v1.A2AService call it names (the JSON-RPC method is the gRPC method's name; REST paths
// map onto the same methods through the proto's HTTP rules) and made on the server's own gRPC
// service through an in-process channel, with the caller's Authorization, A2A-Version and
// A2A-Extensions headers as metadata. So authentication, validation, limits, storage, tenant
// routing and streams are the gRPC service's, and the answers are the same messages in ProtoJSON.
// A2A 0.3's JSON-RPC is read into the 1.0 call it names and answered in 0.3's JSON; 0.3's
// HTTP+JSON (below /v1) goes to the 0.3 gRPC service (a2a.v1.A2AService), which the coordinator
// serves and our agents do not.
// Streams (SendStreamingMessage, SubscribeToTask) go out as Server-Sent Events, with a comment
// line every `keepalive` so that a client that went away is noticed and its call cancelled.
//
// URLs, below the HTTP port:
//   GET  /.well-known/agent-card.json              the root card (the coordinator's: every agent)
//   GET  /agents/<name>/.well-known/agent-card.json agent <name>'s card
//   POST /agents/<name>                            JSON-RPC to agent <name>
//   POST /                                         JSON-RPC, the agent chosen by `tenant`
//   ...  /agents/<name>/message:send etc.           HTTP+JSON to agent <name>
//   ...  /message:send etc.                         HTTP+JSON, the agent chosen by `tenant`
// A request body that names a tenant other than the URL's agent is refused (INVALID_ARGUMENT).
#ifndef A2A_HTTP_BINDINGS_H_
#define A2A_HTTP_BINDINGS_H_

#include <memory>
#include <optional>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace a2a_http {

// The metadata the bindings add to a call they relay for an A2A 0.3 request. A 0.3 call names
// its agent under kTenantMetadata (0.3 has no tenant field): an ASCII value, or any bytes (a UTF-8
// name) under the binary key, which wins when both are given.
inline constexpr char kTenantMetadata[] = "coordinator-tenant";
inline constexpr char kTenantBinaryMetadata[] = "coordinator-tenant-bin";
// The A2A version the caller spoke ("0.3") when a 0.3 request is relayed to the 1.0 service (the
// coordinator's 0.3 gRPC service adds it too): it decides the body of the webhook calls of the
// push configs the call creates (0.3 posts the Task in 0.3's JSON).
inline constexpr char kCallerVersionMetadata[] = "coordinator-caller-version";

// The cards the bindings serve, which they answer with the HTTP caching validators and in the
// form the reader's A2A version reads.
class CardSource {
 public:
  virtual ~CardSource() = default;
  // The card at the base URL of `agent` (/agents/<agent>/.well-known/agent-card.json), or without
  // an agent the one at the root. `base_url` is scheme://host:port as the reader reached the port
  // (its Host header), so a card names the address its reader used. NOT_FOUND when there is no
  // such agent.
  [[nodiscard]] virtual absl::StatusOr<::lf::a2a::v1::AgentCard> Card(
      const std::optional<std::string>& agent, const std::string& base_url) = 0;
};

struct HttpBindingOptions {
  // Longest a call made through the HTTP bindings may take: a blocking SendMessage and every
  // stream end there (DEADLINE_EXCEEDED). The gateway's --a2a_stream_timeout.
  absl::Duration max_call_time = absl::Hours(1);
  // A comment line on an idle event stream this often (default 15s).
  absl::Duration keepalive = absl::Seconds(15);
  // Cache-Control max-age of the agent cards (default 60s).
  absl::Duration card_max_age = absl::Seconds(60);
};

class A2AHttpBindings {
 public:
  // `channel` reaches the gRPC A2A service (grpc::Server::InProcessChannel); `cards` (not owned)
  // must outlive the bindings.
  A2AHttpBindings(std::shared_ptr<grpc::Channel> channel, CardSource* cards,
                  HttpBindingOptions options);
  ~A2AHttpBindings();

  // Adds the routes above to `server`. `scheme` is "http" or "https".
  void Install(httplib::Server& server, const std::string& scheme);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace a2a_http

#endif  // A2A_HTTP_BINDINGS_H_
