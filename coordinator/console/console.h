// The web console (issue 20): a page served on the coordinator's HTTP port at `/` that shows
// evaluations, the leaderboard, work runs and the retry ladder and breaker, live. This file
// installs its routes: the static files compiled into the binary (console_assets.h), read-only
// JSON endpoints under /console/api/ that read the domain stores directly and answer with their
// Protobuf JSON mapping, and /console/api/events, a Server-Sent Events stream of the changes the
// stores announce (console_feed.h). With a token file every /console/api/ call needs a bearer
// token of the reader or admin role (docs/security.md); without one the port is loopback only.
#ifndef COORDINATOR_CONSOLE_CONSOLE_H_
#define COORDINATOR_CONSOLE_CONSOLE_H_

#include <memory>

#include "absl/time/time.h"
#include "coordinator/a2a/agent_contacts.h"
#include "coordinator/console/console_feed.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/token_source.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/retry/breaker.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/store/work/work_store.h"
#include "storage/store.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace coordinator {

// What the console reads; none owned, all must outlive the HTTP server the console is installed
// on (the coordinator stops that server before it closes the stores).
struct ConsoleParts {
  storage::Store* store = nullptr;
  ContextStore* contexts = nullptr;
  ConversationStore* conversations = nullptr;
  TaskStateStore* tasks = nullptr;
  Breaker* breaker = nullptr;
  WorkStore* work = nullptr;
  A2ATasks* a2a_tasks = nullptr;
  AgentRegistryStore* agents = nullptr;
  // What the gateway observed of each agent's reachability; the overview asks it to probe the
  // agents it has no fresh word of.
  AgentContacts* contacts = nullptr;
  // The tokens in force (read again when the file changes); null: no authentication (loopback
  // only).
  std::shared_ptr<TokenSource> tokens;
  // Shared with the event streams, which may run after the handler that started them returned.
  std::shared_ptr<ConsoleFeed> feed;
  // How often an idle event stream sends a comment, so proxies and the browser keep it open and
  // a closed connection is noticed (default 15s).
  absl::Duration keepalive = absl::Seconds(15);
};

class Console {
 public:
  explicit Console(ConsoleParts parts) : parts_(std::move(parts)) {}

  // Adds GET / and everything under /console/. Must run before the A2A bindings' Install, whose
  // REST catch-all would otherwise take these paths (httplib matches in registration order).
  void Install(httplib::Server& server);

 private:
  ConsoleParts parts_;
};

}  // namespace coordinator

#endif  // COORDINATOR_CONSOLE_CONSOLE_H_
