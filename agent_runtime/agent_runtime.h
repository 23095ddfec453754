// The shared A2A agent runtime: turns an agent's logic into an A2A v1.0 gRPC server
// (lf.a2a.v1.A2AService). The agent implements AgentExecutor ("execute this request, publishing
// events" and "cancel"); the runtime assigns task and context ids, drives the status lifecycle,
// streams events, handles cancellation, and registers the agent with the coordinator at
// start-up. It keeps no task state beyond the executions running right now: tasks are stored
// by the coordinator, which is where clients read them.
#ifndef AGENT_RUNTIME_AGENT_RUNTIME_H_
#define AGENT_RUNTIME_AGENT_RUNTIME_H_

#include <memory>
#include <optional>
#include <string>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/grpc_client.h"
#include "grpcpp/grpcpp.h"

namespace agent_runtime {

namespace a2apb = ::lf::a2a::v1;

class AgentHttp;

// What the agent's logic gets for one message.
struct RequestContext {
  std::string task_id;
  std::string context_id;
  // The message to act on (task_id and context_id filled in).
  a2apb::Message message;
};

// Where the agent's logic reports progress. Thread-safe. Once a terminal or interrupted state
// (INPUT_REQUIRED, AUTH_REQUIRED) is published, later events are dropped.
class EventPublisher {
 public:
  virtual ~EventPublisher() = default;
  // Publishes a status; `text`, when not empty, becomes the status message.
  virtual void UpdateStatus(a2apb::TaskState state, absl::string_view text = "") = 0;
  virtual void AddArtifact(const a2apb::Artifact& artifact, bool append = false,
                           bool last_chunk = true) = 0;
  // True once the task was canceled; long work should check it and return.
  virtual bool cancelled() const = 0;
  // Waits up to `timeout` for cancellation; true when canceled.
  virtual bool WaitCancelled(absl::Duration timeout) = 0;
};

class AgentExecutor {
 public:
  virtual ~AgentExecutor() = default;
  // Runs one request on a thread of the runtime, its own while it runs (an idle one reused, or a
  // new one); may block. Returning without a terminal or interrupted state completes the task
  // (or cancels it, when it was canceled meanwhile).
  virtual void Execute(const RequestContext& request, EventPublisher& events) = 0;
  // Called when a client cancels the running request (EventPublisher::cancelled() is already
  // true). The runtime publishes CANCELED; this only has to make Execute return soon.
  virtual void Cancel(const RequestContext& request) { (void)request; }
};

struct RuntimeOptions {
  // gRPC address to listen on (default 127.0.0.1:0: a free port).
  std::string listen = "127.0.0.1:0";
  // The agent's name: its tenant at the coordinator.
  std::string name = "agent";
  // Coordinator to register with at start-up (host:port); empty: do not register.
  std::string coordinator;
  // Host put in the registered endpoint (default 127.0.0.1).
  std::string advertise_host = "127.0.0.1";
  // Deadline of one registration call, and how many calls to try with backoff (defaults 5s, 20).
  absl::Duration register_timeout = absl::Seconds(5);
  int register_attempts = 20;
  // The card registered with the coordinator and served by GetExtendedAgentCard.
  a2apb::AgentCard card;
  // Token and TLS root used to register (default none: plaintext, no token).
  common::ClientCredentialOptions credentials;
  // host:port of an HTTP port serving the card (/.well-known/agent-card.json) and the A2A
  // JSON-RPC and HTTP+JSON bindings (agent_http.h); port 0 picks one. Default empty: none.
  std::string http_listen;
  // The URL the card names for those bindings: where the agent's readers reach it (a container's
  // name, a proxy). Default empty: the address each reader used.
  std::string card_url;
};

class AgentServer {
 public:
  // Starts serving, then registers with the coordinator when one is configured (failing when
  // every registration attempt fails). `executor` must outlive the server.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AgentServer>> Start(RuntimeOptions options,
                                                                          AgentExecutor* executor);
  ~AgentServer();

  int port() const { return port_; }
  // The HTTP port (RuntimeOptions::http_listen), 0 when there is none.
  int http_port() const;
  // host:port registered with the coordinator.
  const std::string& endpoint() const { return endpoint_; }

  // Cancels running executions, stops serving and waits for them to end. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(2));
  void Wait();

  class Service;

 private:
  AgentServer() = default;
  // Registers with options.coordinator, trying again while it is unavailable.
  [[nodiscard]] absl::Status Register(const RuntimeOptions& options, const a2apb::AgentCard& card);

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AgentHttp> http_;
  int port_ = 0;
  std::string endpoint_;
  bool shut_down_ = false;
};

}  // namespace agent_runtime

#endif  // AGENT_RUNTIME_AGENT_RUNTIME_H_
