// Assembles the coordinator: opens the store, builds the domain objects and their gRPC services,
// adds health and reflection, and listens. main() and the in-process service tests both use it,
// so what the tests exercise is what runs.
#ifndef COORDINATOR_SERVER_H_
#define COORDINATOR_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/thread_pool.h"
#include "coordinator/context_service.h"
#include "coordinator/conversation_service.h"
#include "coordinator/limits.h"
#include "grpcpp/grpcpp.h"
#include "storage/rocks_store.h"

namespace coordinator {

struct ServerOptions {
  // gRPC address to listen on (default 127.0.0.1:50051); port 0 picks a free port.
  std::string listen = "127.0.0.1:50051";
  // RocksDB directory (default ./data); created when missing.
  std::string data_dir = "./data";
  // Largest request accepted, in bytes (default 4 MiB); larger ones get RESOURCE_EXHAUSTED.
  int max_request_bytes = 4 << 20;
  // Threads that run storage work (default 32). Concurrent durable writes share an fsync
  // (group commit), so this is well above the core count on purpose.
  int worker_threads = 32;
  // Sync the write-ahead log before acknowledging (default true).
  bool sync_writes = true;
  Limits limits;
};

class CoordinatorServer {
 public:
  // Opens the database and starts serving. Fails with a clear message when the data dir cannot
  // be used, the database is locked or newer, or the address cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      ServerOptions options);

  // Shuts down if Shutdown was not called.
  ~CoordinatorServer();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // host:port actually bound.
  const std::string& address() const { return address_; }

  // Reports NOT_SERVING, stops accepting calls, lets in-flight calls finish for up to `grace`
  // (then cancels them), drains the work pool and closes the database. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  // Blocks until Shutdown has been called and the server has stopped.
  void Wait();

 private:
  CoordinatorServer() = default;

  // Declaration order is teardown order reversed: the store outlives everything that uses it.
  std::unique_ptr<storage::RocksStore> store_;
  std::unique_ptr<common::ThreadPool> pool_;
  std::unique_ptr<ContextStore> contexts_;
  std::unique_ptr<ConversationStore> conversations_;
  std::unique_ptr<ContextServiceImpl> context_service_;
  std::unique_ptr<ConversationServiceImpl> conversation_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
  bool shut_down_ = false;
};

}  // namespace coordinator

#endif  // COORDINATOR_SERVER_H_
