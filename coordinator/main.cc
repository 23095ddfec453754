// The coordinator binary: flags, signal handling, and the server's lifetime.
#include <csignal>
#include <cstdlib>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/log.h"
#include "coordinator/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051", "gRPC address to listen on (host:port)");
ABSL_FLAG(std::string, data_dir, "./data", "RocksDB data directory; created when missing");
ABSL_FLAG(int, max_request_bytes, 4 << 20,
          "largest request accepted, in bytes; larger ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int, worker_threads, 32, "threads that run storage work");
ABSL_FLAG(double, shutdown_grace_seconds, 5,
          "on SIGTERM/SIGINT, how long in-flight calls may run before they are cancelled");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "coordinator: durable state for multi-agent systems, over gRPC.\n"
      "  coordinator [--listen=127.0.0.1:50051] [--data_dir=./data]");
  absl::ParseCommandLine(argc, argv);

  // Block the stop signals in every thread (gRPC's and RocksDB's threads inherit this mask);
  // one thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  coordinator::ServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  if (options.max_request_bytes <= 0 || options.worker_threads <= 0) {
    LOG_ERROR("--max_request_bytes and --worker_threads must be positive");
    return 2;
  }

  absl::StatusOr<std::unique_ptr<coordinator::CoordinatorServer>> server =
      coordinator::CoordinatorServer::Start(options);
  if (!server.ok()) {
    LOG_ERROR("cannot start: %s", server.status().message());
    return 1;
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  LOG_INFO("received %s; draining calls", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Shutdown(absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds)));
  LOG_INFO("stopped cleanly");
  return 0;
}
