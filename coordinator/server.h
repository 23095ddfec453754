// Assembles the coordinator: opens the store, builds the domain objects and their gRPC services,
// adds health and reflection, and listens. main() and the in-process service tests both use it,
// so what the tests exercise is what runs.
#ifndef COORDINATOR_SERVER_H_
#define COORDINATOR_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "a2a_http/bindings.h"
#include "a2a_http/http.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/thread_pool.h"
#include "coordinator/a2a/cards.h"
#include "coordinator/a2a/gateway.h"
#include "coordinator/a2a/service.h"
#include "coordinator/a2a/service_v03.h"
#include "coordinator/console/console.h"
#include "coordinator/console/console_feed.h"
#include "coordinator/replica_feed.h"
#include "coordinator/rpc/admin_service.h"
#include "coordinator/rpc/agent_registry_service.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/breaker_service.h"
#include "coordinator/rpc/context_service.h"
#include "coordinator/rpc/conversation_service.h"
#include "coordinator/rpc/server_metrics.h"
#include "coordinator/rpc/stream_slots.h"
#include "coordinator/rpc/task_state_service.h"
#include "coordinator/rpc/tls.h"
#include "coordinator/rpc/token_source.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/rpc/work_service.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/store/work/reaper.h"
#include "grpcpp/grpcpp.h"
#include "storage/etcd_election.h"
#include "storage/etcd_store.h"
#include "storage/rocks_store.h"

namespace coordinator {

struct ServerOptions {
  // gRPC address to listen on (default 127.0.0.1:50051); port 0 picks a free port.
  std::string listen = "127.0.0.1:50051";
  // RocksDB directory (default ./data); created when missing. Unused with an etcd store.
  std::string data_dir = "./data";
  // Where the data lives (docs/storage.md): empty (the default) for the embedded RocksDB in
  // data_dir, or an etcd cluster, etcd://host:port[,host:port...] (etcds:// for TLS). With etcd,
  // `etcd` holds the prefix, credentials and limits (its endpoints come from this URL), and
  // several coordinators may serve one prefix.
  std::string store_url;
  storage::EtcdStoreOptions etcd;
  // When set, a backup directory (Admin.Backup) copied into data_dir before opening it;
  // data_dir must then be absent or empty (default empty: no restore).
  std::string restore_from;
  // When set, Admin.Backup writes only under this directory (default empty: any absolute path
  // outside data_dir that an admin names).
  std::string backup_root;
  // Retention of records that ended long ago (default: kept forever).
  RetentionOptions retention;
  // Largest request accepted, in bytes (default 4 MiB); larger ones get RESOURCE_EXHAUSTED.
  int max_request_bytes = 4 << 20;
  // Threads of the work pool: scans, long transactions, and the A2A calls that wait on an agent
  // or on a sync. On RocksDB short calls run on gRPC's threads, and no call waits for its fsync
  // on a thread (coordinator/rpc/unary_handler.h), so 16 need not grow with the number of
  // concurrent writers. On etcd every transaction holds a worker across its round trips, and
  // the transactions in flight are what fills a batch (docs/storage.md), so it takes 128.
  // 0 (the default) picks by the store; a positive number is taken as it is.
  int worker_threads = 0;
  // Calls that may wait at once, for a worker or for the fsync that makes them durable (default
  // 4096); past it a new call gets RESOURCE_EXHAUSTED at once. At the 5-10k durable calls/s one
  // coordinator serves (bench/RESULTS.md, W1), 4096 waiting calls are about half a second of
  // work: a call queued behind more would mostly outlive its client's deadline, and memory stays
  // bounded whatever clients send, also when the disk slows down. 0: no bound.
  int64_t max_queued_calls = 4096;
  // Sync the write-ahead log before acknowledging (default true).
  bool sync_writes = true;
  // For tests: runs before each WAL sync of the embedded store, which it may hold or fail
  // (storage::StoreOptions::before_wal_sync). Unused with an etcd store.
  std::function<absl::Status()> before_wal_sync;
  Limits limits;
  // Retry state: the tier ladder (default DefaultTierLadder()) and per-record limits.
  TaskStateOptions task_state;
  // Loop breaker: default thresholds (2 repeated errors, 3 failures at one tier, 2 failures
  // of one quality gate) and log retention.
  BreakerOptions breaker;
  // How often the reaper takes back work items whose lease expired (default 1s).
  absl::Duration reaper_period = absl::Seconds(1);
  // With an etcd store, the background jobs (the reaper, retention, the A2A gateway's deliveries
  // and webhooks) run on one replica, elected through an etcd lease of this TTL (default 10s;
  // whole seconds, 2s to 300s): how long the jobs may go without a runner after their replica
  // dies. Unused on RocksDB, where the one process runs them.
  absl::Duration election_ttl = absl::Seconds(10);
  // This replica's name in the election (what the log and etcd show as the leader). Default
  // empty: <hostname>:<gRPC port>.
  std::string replica_name;
  // Bounds on work runs: items per run, text and metadata sizes (see WorkLimits).
  WorkLimits work_limits;
  // HTTP address of the A2A JSON-RPC and HTTP+JSON bindings, the agent cards and /metrics;
  // default 127.0.0.1:8080, port 0 picks one, empty turns it off. A port that cannot be bound is
  // logged, not fatal.
  std::string http_listen = "127.0.0.1:8080";
  // Connections the HTTP port serves at once (default 64): each event stream holds one.
  int http_threads = 64;
  // A comment line on an idle event stream of the HTTP port (A2A streams, the console's change
  // feed) this often (default 15s): how soon a reader that went away is noticed and its thread
  // freed.
  absl::Duration http_keepalive = absl::Seconds(15);
  // A2A gateway: agent call deadlines, delivery backoff and attempts (see GatewayOptions).
  GatewayOptions gateway;
  // The agent an A2A request without a tenant goes to (--default_agent). Default empty: the
  // only registered agent when exactly one is; otherwise such a request is refused with the
  // list of agents. It need not be registered at start (NOT_FOUND at call time until it is).
  std::string default_agent;
  // A2A store: push-config and webhook retry limits (see A2AStoreOptions).
  A2AStoreOptions a2a_store;
  // Bearer tokens, principals and roles (docs/security.md). Empty (the default): no
  // authentication, and Start refuses a non-loopback --listen or --http_listen.
  std::string token_file;
  // How often the token file is checked for changes (and expired tokens' streams ended).
  absl::Duration token_check_period = absl::Milliseconds(250);
  // Also read the token file again on SIGHUP (the coordinator binary; the caller has blocked
  // SIGHUP in every thread).
  bool reload_on_sighup = false;
  // TLS on the gRPC and HTTP ports: PEM certificate chain and private key (both or neither;
  // default neither, plaintext). A missing, unreadable or mismatched pair fails Start.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Open streams (A2A SendStreamingMessage and SubscribeToTask, WatchRun) at once; one more is
  // RESOURCE_EXHAUSTED (default 1000).
  int max_streams = kDefaultMaxStreams;
  // Events or changes one stream may hold unsent before it is closed with RESOURCE_EXHAUSTED,
  // telling the client to subscribe again (default 1024).
  int stream_queue_limit = kDefaultStreamQueueLimit;
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
  // Port of the agent-card HTTP server, or 0 when it is off.
  int http_port() const { return card_http_ != nullptr ? card_http_->port() : 0; }

  // Reports NOT_SERVING, stops accepting calls, lets in-flight calls finish for up to `grace`
  // (then cancels them), drains the work pool and closes the database. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  // Blocks until Shutdown has been called and the server has stopped.
  void Wait();

  // Whether this replica runs the background jobs now: always on RocksDB (until Shutdown), the
  // elected replica on etcd. Also the /metrics gauge coordinator_background_jobs_leader.
  bool runs_background_jobs() const { return runs_jobs_.load(); }
  // For tests: this replica leaves the election as a killed process would (its lease is not
  // revoked, so another replica takes over only once it expires); its jobs stop. Nothing on
  // RocksDB.
  void AbandonElectionForTest();

 private:
  CoordinatorServer() = default;

  // The steps of Start, in order.
  [[nodiscard]] absl::Status OpenStore(const ServerOptions& options);
  // Builds what is derived from the records (the running totals, the contexts' time index) when
  // the store has none yet; before anything else writes.
  [[nodiscard]] absl::Status BuildDerivedRecords();
  void BuildParts(const ServerOptions& options);
  // On an etcd store: hears what other replicas commit and tells this replica's listeners
  // (replica_feed.h). Nothing on RocksDB.
  [[nodiscard]] absl::Status StartReplicaFeed();
  [[nodiscard]] absl::Status Listen(const ServerOptions& options,
                                    const std::optional<ServerTls>& tls,
                                    std::shared_ptr<TokenSource> tokens);
  // On RocksDB runs the background jobs; on etcd campaigns for them (RunBackgroundJobs).
  [[nodiscard]] absl::Status StartBackgroundJobs(const ServerOptions& options);
  // Starts (true) or stops the reaper, the retention task and the gateway's active part.
  void RunBackgroundJobs(bool run);
  // Logs how many retry tasks and runs have no owner, when there are any (authentication on).
  void LogRecordsWithoutOwner();
  // The HTTP port: the web console (console/console.h), the A2A JSON bindings and cards
  // (a2a_http/bindings.h) and /metrics.
  // A channel to this server's own gRPC port (in-process with TLS, loopback TCP without).
  std::shared_ptr<grpc::Channel> ChannelToSelf(bool tls);
  void ServeHttp(const ServerOptions& options, const std::optional<ServerTls>& tls,
                 std::shared_ptr<TokenSource> tokens);

  // Declaration order is teardown order reversed: the store outlives everything that uses it.
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<common::ThreadPool> pool_;
  // The web console's change feed: the stores' change hooks point at it, so it outlives them.
  std::shared_ptr<ConsoleFeed> console_feed_;
  std::unique_ptr<ConsoleRunWatcher> console_run_watcher_;
  std::unique_ptr<CallRunner> calls_;
  std::unique_ptr<StreamSlots> stream_slots_;
  std::unique_ptr<ContextStore> contexts_;
  std::unique_ptr<ConversationStore> conversations_;
  std::unique_ptr<ContextServiceImpl> context_service_;
  std::unique_ptr<ConversationServiceImpl> conversation_service_;
  std::unique_ptr<TaskStateStore> tasks_;
  std::unique_ptr<Breaker> breaker_;
  std::unique_ptr<TaskStateServiceImpl> task_state_service_;
  std::unique_ptr<BreakerServiceImpl> breaker_service_;
  std::unique_ptr<WorkNotifier> work_notifier_;
  std::unique_ptr<WorkStore> work_;
  std::unique_ptr<WorkServiceImpl> work_service_;
  std::unique_ptr<Reaper> reaper_;
  std::unique_ptr<TaskNotifier> a2a_notifier_;
  std::unique_ptr<A2ATasks> a2a_tasks_;
  std::unique_ptr<A2ADeliveryQueue> a2a_deliveries_;
  std::unique_ptr<A2APush> a2a_push_;
  std::unique_ptr<AgentRegistryStore> agents_;
  std::unique_ptr<A2AGateway> gateway_;
  std::unique_ptr<A2AServiceImpl> a2a_service_;
  // A2A 0.3's gRPC service, relaying to a2a_service_ over ChannelToSelf.
  std::unique_ptr<A2AServiceV03> a2a_v03_service_;
  std::unique_ptr<AgentRegistryServiceImpl> agent_registry_service_;
  std::unique_ptr<Exporter> exporter_;
  std::unique_ptr<Retention> retention_;
  std::unique_ptr<RetentionTask> retention_task_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  std::unique_ptr<RegistryCardSource> cards_;
  std::unique_ptr<a2a_http::A2AHttpBindings> http_bindings_;
  std::unique_ptr<Console> console_;
  std::unique_ptr<a2a_http::HttpServer> card_http_;
  // Tells the notifiers, the gateway and the console feed above of other replicas' commits;
  // stopped first in Shutdown.
  std::unique_ptr<ReplicaFeed> replica_feed_;
  std::unique_ptr<grpc::Server> server_;
  // Scrape-time figures of /metrics; reads the store, so it goes before it.
  std::unique_ptr<ServerMetrics> metrics_;
  // Set by OpenStore on an etcd store: what the election connects with.
  std::optional<storage::EtcdStoreOptions> etcd_options_;
  // What RunBackgroundJobs needs to start the jobs.
  absl::Duration reaper_period_;
  RetentionOptions retention_options_;
  // Serialises the jobs' starts and stops (the election's thread, Shutdown); once closed
  // (Shutdown), they never start again.
  absl::Mutex jobs_mu_;
  bool jobs_closed_ ABSL_GUARDED_BY(jobs_mu_) = false;
  std::atomic<bool> runs_jobs_{false};
  // Campaigns for the background jobs on an etcd store; destroyed (resigning) in Shutdown,
  // after the jobs stopped.
  std::unique_ptr<storage::EtcdElection> election_;
  int port_ = 0;
  std::string address_;
  bool shut_down_ = false;
};

}  // namespace coordinator

#endif  // COORDINATOR_SERVER_H_
