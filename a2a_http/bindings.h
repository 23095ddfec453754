// The A2A JSON-RPC and HTTP+JSON (REST) bindings on the coordinator's HTTP port, and the agent
// cards served there.
//
// One implementation behind three bindings: an HTTP request is transcoded to the
// lf.a2a.v1.A2AService call it names (the JSON-RPC method is the gRPC method's name; REST paths
// map onto the same methods through the proto's HTTP rules) and made on the coordinator's own gRPC
// server through an in-process channel, with the caller's Authorization, A2A-Version and
// A2A-Extensions headers as metadata. So authentication, validation, limits, storage, tenant
// routing and streams are the gRPC service's, and the answers are the same messages in ProtoJSON.
// Streams (SendStreamingMessage, SubscribeToTask) go out as Server-Sent Events, with a comment
// line every `keepalive` so that a client that went away is noticed and its call cancelled.
//
// URLs, below the HTTP port:
//   GET  /.well-known/agent-card.json              the coordinator's card (every agent)
//   GET  /agents/<name>/.well-known/agent-card.json agent <name>'s card
//   POST /agents/<name>                            JSON-RPC to agent <name>
//   POST /                                         JSON-RPC, the agent chosen by `tenant`
//   ...  /agents/<name>/message:send etc.           HTTP+JSON to agent <name>
//   ...  /message:send etc.                         HTTP+JSON, the agent chosen by `tenant`
// A request body that names a tenant other than the URL's agent is refused (INVALID_ARGUMENT).
#ifndef COORDINATOR_A2A_HTTP_BINDINGS_H_
#define COORDINATOR_A2A_HTTP_BINDINGS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "coordinator/a2a/cards.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "grpcpp/channel.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace coordinator {

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
  // `channel` reaches the coordinator's gRPC server (Server::InProcessChannel). `addresses`
  // returns where the coordinator is reached, for the cards; its http_base_url is replaced by
  // the one the request came to (its Host header), so a card names the address its reader used.
  A2AHttpBindings(std::shared_ptr<grpc::Channel> channel, AgentRegistryStore* agents,
                  std::function<CardAddresses()> addresses, HttpBindingOptions options);
  ~A2AHttpBindings();

  // Adds the routes above to `server`. `scheme` is "http" or "https".
  void Install(httplib::Server& server, const std::string& scheme);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_HTTP_BINDINGS_H_
