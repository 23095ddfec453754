#include "coordinator/server.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/grpc_client.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "coordinator/rpc/parse_error_interceptor.h"
#include "coordinator/store/all_tallies.h"
#include "coordinator/store/contexts/context_store.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "storage/backup.h"

namespace coordinator {
namespace {

// The work pool's threads when ServerOptions::worker_threads is 0: on RocksDB, and on etcd,
// where every transaction holds one across its round trips (server.h).
constexpr int kWorkers = 16;
constexpr int kWorkersOnEtcd = 128;

// Services whose health is reported individually as well as under "".
constexpr const char* kServiceNames[] = {
    "coordinator.v1.ContextService",
    "coordinator.v1.ConversationService",
    "coordinator.v1.TaskStateService",
    "coordinator.v1.BreakerService",
    "coordinator.v1.WorkService",
    "lf.a2a.v1.A2AService",
    "a2a.v1.A2AService",
    "coordinator.v1.AgentRegistry",
    "coordinator.v1.Admin",
};

std::string WithPort(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return absl::StrCat(listen, ":", port);
  return absl::StrCat(listen.substr(0, colon), ":", port);
}

// Without a token file, anyone who can reach the port can do everything: only addresses that
// other machines cannot reach are allowed (127.0.0.0/8, ::1, localhost, unix sockets).
absl::Status RequireLoopback(absl::string_view flag, absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) {
    return absl::OkStatus();
  }
  const size_t colon = listen.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? listen : listen.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  if (host == "localhost" || host == "::1" || absl::StartsWith(host, "127.")) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      flag, "=", listen,
      " is not a loopback address, and without --token_file anyone who reaches it could do "
      "everything: give a --token_file (docs/security.md) or listen on 127.0.0.1"));
}

// Checks the options that no part checks on its own, and applies the ones that several parts
// share (one --max_page_size for every coordinator.v1 listing).
absl::Status CheckAndShareOptions(ServerOptions& options) {
  if (options.reaper_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("reaper_period must be positive");
  }
  if (options.election_ttl < absl::Seconds(2) || options.election_ttl > absl::Seconds(300) ||
      options.election_ttl != absl::Seconds(absl::ToInt64Seconds(options.election_ttl))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--election_ttl must be whole seconds from 2s to 300s, not ",
                     absl::FormatDuration(options.election_ttl)));
  }
  RETURN_IF_ERROR(common::ValidateOptionalId("--replica_name", options.replica_name));
  RETURN_IF_ERROR(ValidateTierLadder(options.task_state.tier_ladder));
  RETURN_IF_ERROR(ValidateBreakerOptions(options.breaker));
  if (options.limits.max_page_size < 1 || options.max_streams < 1 ||
      options.stream_queue_limit < 1) {
    return absl::InvalidArgumentError(
        "max_page_size, max_streams and stream_queue_limit must be positive");
  }
  options.task_state.max_page_size = options.limits.max_page_size;
  options.breaker.max_log_page_size = options.limits.max_page_size;
  options.work_limits.max_page_size = options.limits.max_page_size;
  // One outbound allow-list: webhooks, agent cards and the agents registered by card.
  options.gateway.outbound_allow = options.a2a_store.outbound_allow;
  RETURN_IF_ERROR(ValidateRetentionOptions(options.retention));
  // An agent name; whether it is registered is checked per call (it may register later).
  RETURN_IF_ERROR(common::ValidateOptionalId("--default_agent", options.default_agent));
  if (!options.backup_root.empty()) {
    std::error_code ec;
    if (options.backup_root.front() != '/' ||
        !std::filesystem::is_directory(options.backup_root, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--backup_root must be an absolute path to an existing directory, not ",
                       options.backup_root));
    }
  }
  return absl::OkStatus();
}

// The token file's tokens, or null when there is none: then only loopback is served.
absl::StatusOr<std::shared_ptr<TokenSource>> LoadTokens(const ServerOptions& options) {
  if (options.token_file.empty()) {
    RETURN_IF_ERROR(RequireLoopback("--listen", options.listen));
    if (!options.http_listen.empty()) {
      RETURN_IF_ERROR(RequireLoopback("--http_listen", options.http_listen));
    }
    return nullptr;
  }
  std::vector<std::string> warnings;
  ASSIGN_OR_RETURN(std::unique_ptr<TokenSource> loaded,
                   TokenSource::Open(options.token_file, &warnings));
  for (const std::string& warning : warnings) LOG_WARN("%s", warning);
  return std::shared_ptr<TokenSource>(std::move(loaded));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(ServerOptions options) {
  RETURN_IF_ERROR(CheckAndShareOptions(options));
  ASSIGN_OR_RETURN(const std::shared_ptr<TokenSource> tokens, LoadTokens(options));
  ASSIGN_OR_RETURN(const std::optional<ServerTls> tls,
                   LoadServerTls(options.tls_cert_file, options.tls_key_file));
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  RETURN_IF_ERROR(server->OpenStore(options));
  RETURN_IF_ERROR(server->BuildDerivedRecords());
  server->BuildParts(options);
  RETURN_IF_ERROR(server->StartReplicaFeed());
  RETURN_IF_ERROR(server->Listen(options, tls, tokens));
  // The token file is read again when it changes and on SIGHUP, from here on.
  if (tokens != nullptr)
    tokens->StartWatching(options.token_check_period, options.reload_on_sighup);
  // The card's interface URL: an absolute https URL when the port takes TLS (as A2A asks of
  // secured interfaces), else the plain host:port that gRPC clients dial.
  CardAddresses addresses;
  addresses.grpc_address =
      tls.has_value() ? absl::StrCat("https://", server->address_) : server->address_;
  addresses.bearer_auth = tokens != nullptr;
  addresses.default_agent = options.default_agent;
  server->a2a_service_->set_card_addresses(addresses);
  RETURN_IF_ERROR(server->StartBackgroundJobs(options));
  if (!options.http_listen.empty()) server->ServeHttp(options, tls, tokens);
  return server;
}

absl::Status CoordinatorServer::OpenStore(const ServerOptions& options) {
  if (!options.store_url.empty()) {
    if (!options.restore_from.empty()) {
      return absl::InvalidArgumentError(
          "--restore_from restores a backup into the embedded store (--data_dir); to move a "
          "backup into etcd, start a coordinator on the backup and copy with coordctl "
          "export/import");
    }
    storage::EtcdStoreOptions etcd = options.etcd;
    RETURN_IF_ERROR(storage::ParseEtcdUrl(options.store_url, &etcd));
    ASSIGN_OR_RETURN(std::unique_ptr<storage::EtcdStore> store,
                     storage::EtcdStore::Open(std::move(etcd)));
    LOG_INFO("opened etcd store %s under prefix %s (schema version %d)", options.store_url,
             store->options().prefix, store->schema_version());
    etcd_options_ = store->options();
    store_ = std::move(store);
    return absl::OkStatus();
  }
  if (!options.restore_from.empty()) {
    RETURN_IF_ERROR(storage::RestoreBackup(options.restore_from, options.data_dir));
    LOG_INFO("restored the backup %s into %s", options.restore_from, options.data_dir);
  }
  storage::StoreOptions store_options;
  store_options.path = options.data_dir;
  store_options.sync_writes = options.sync_writes;
  store_options.before_wal_sync = options.before_wal_sync;
  ASSIGN_OR_RETURN(std::unique_ptr<storage::RocksStore> store,
                   storage::RocksStore::Open(store_options));
  LOG_INFO("opened database %s (schema version %d, %s writes)", options.data_dir,
           store->schema_version(), options.sync_writes ? "WAL-synced" : "unsynced");
  store_ = std::move(store);
  return absl::OkStatus();
}

absl::Status CoordinatorServer::BuildDerivedRecords() {
  // Before anything writes: the running totals and the contexts' time index of a database that
  // has none yet (written before they were kept: schema 1) are computed from its records, once.
  const absl::Time started = absl::Now();
  ASSIGN_OR_RETURN(const bool tallied, EnsureTalliesBuilt(*store_));
  ASSIGN_OR_RETURN(const bool indexed, ContextStore::EnsureTimeIndex(*store_));
  if (tallied || indexed) {
    LOG_INFO("built the running totals and the contexts' time index in %s",
             absl::FormatDuration(absl::Now() - started));
  }
  return absl::OkStatus();
}

void CoordinatorServer::BuildParts(const ServerOptions& options) {
  storage::Store* store = store_.get();
  const int workers = options.worker_threads > 0  ? options.worker_threads
                      : options.store_url.empty() ? kWorkers
                                                  : kWorkersOnEtcd;
  pool_ = std::make_unique<common::ThreadPool>(workers, options.max_queued_calls, "rpc-work");
  console_feed_ = std::make_shared<ConsoleFeed>();
  ConsoleFeed* feed = console_feed_.get();
  calls_ = std::make_unique<CallRunner>(pool_.get(), store, options.max_queued_calls);
  stream_slots_ = std::make_unique<StreamSlots>(options.max_streams);
  // Contexts and conversations.
  contexts_ = std::make_unique<ContextStore>(store, options.limits);
  conversations_ = std::make_unique<ConversationStore>(store, options.limits);
  contexts_->set_on_change([feed](const std::string& id) { feed->Publish("context", id); });
  conversations_->set_on_change(
      [feed](const std::string& id) { feed->Publish("conversation", id); });
  context_service_ = std::make_unique<ContextServiceImpl>(contexts_.get(), calls_.get());
  conversation_service_ = std::make_unique<ConversationServiceImpl>(conversations_.get(),
                                                                    contexts_.get(), calls_.get());
  // Retry state and the loop breaker.
  tasks_ = std::make_unique<TaskStateStore>(store, options.task_state);
  tasks_->set_on_change([feed](const std::string& id) { feed->Publish("retry", id); });
  breaker_ = std::make_unique<Breaker>(store, tasks_.get(), options.breaker);
  task_state_service_ = std::make_unique<TaskStateServiceImpl>(tasks_.get(), calls_.get());
  breaker_service_ = std::make_unique<BreakerServiceImpl>(breaker_.get(), calls_.get());
  // Work runs.
  work_notifier_ = std::make_unique<WorkNotifier>();
  console_run_watcher_ = std::make_unique<ConsoleRunWatcher>(feed);
  if (!work_notifier_->Subscribe(WorkNotifier::kAllRuns, console_run_watcher_.get())) {
    LOG_WARN("the console will not see run changes: the work notifier is closed");
  }
  work_ = std::make_unique<WorkStore>(
      store, work_notifier_.get(), options.work_limits, nullptr,
      options.store_url.empty() ? LeaseExpiry::kWallClock : LeaseExpiry::kObserved);
  work_service_ = std::make_unique<WorkServiceImpl>(work_.get(), work_notifier_.get(), calls_.get(),
                                                    options.stream_queue_limit);
  work_service_->set_stream_slots(stream_slots_.get());
  // The A2A gateway.
  a2a_notifier_ = std::make_unique<TaskNotifier>();
  a2a_notifier_->SetObserver([feed](const std::string& id) { feed->Publish("task", id); });
  a2a_tasks_ =
      std::make_unique<A2ATasks>(store, a2a_notifier_.get(), options.limits, options.a2a_store);
  a2a_deliveries_ = std::make_unique<A2ADeliveryQueue>(store, a2a_notifier_.get());
  a2a_push_ = std::make_unique<A2APush>(store, options.limits, options.a2a_store);
  agents_ = std::make_unique<AgentRegistryStore>(store);
  gateway_ = std::make_unique<A2AGateway>(a2a_tasks_.get(), a2a_deliveries_.get(), a2a_push_.get(),
                                          agents_.get(), a2a_notifier_.get(), options.gateway);
  A2AGateway* gateway = gateway_.get();
  gateway->contacts()->set_on_change(
      [feed](const std::string& name) { feed->Publish("agent", name); });
  agents_->set_on_register(
      [gateway](const v1::Agent& agent) { gateway->AgentRegistered(agent.name()); });
  a2a_service_ = std::make_unique<A2AServiceImpl>(a2a_tasks_.get(), a2a_push_.get(), agents_.get(),
                                                  gateway, calls_.get());
  a2a_service_->set_stream_limits(stream_slots_.get(),
                                  static_cast<size_t>(options.stream_queue_limit));
  a2a_service_->set_default_agent(options.default_agent);
  a2a_v03_service_ = std::make_unique<A2AServiceV03>();
  agent_registry_service_ = std::make_unique<AgentRegistryServiceImpl>(agents_.get(), calls_.get());
  agent_registry_service_->set_resolver(
      [gateway](const v1::Agent& request) { return gateway->ResolveRegistration(request); });
  // Data care.
  exporter_ =
      std::make_unique<Exporter>(store, options.limits, options.task_state, options.breaker);
  retention_ = std::make_unique<Retention>(store);
  admin_service_ = std::make_unique<AdminServiceImpl>(store, options.data_dir, options.backup_root,
                                                      exporter_.get(), retention_.get(),
                                                      options.retention, calls_.get());
  metrics_ =
      std::make_unique<ServerMetrics>(store, work_.get(), [this] { return runs_jobs_.load(); });
}

absl::Status CoordinatorServer::StartReplicaFeed() {
  auto* etcd = dynamic_cast<storage::EtcdStore*>(store_.get());
  if (etcd == nullptr) return absl::OkStatus();
  ReplicaFeedListeners listeners;
  listeners.a2a = a2a_notifier_.get();
  listeners.gateway = gateway_.get();
  listeners.work = work_notifier_.get();
  listeners.console = console_feed_.get();
  ASSIGN_OR_RETURN(replica_feed_, ReplicaFeed::Start(etcd, listeners));
  return absl::OkStatus();
}

absl::Status CoordinatorServer::Listen(const ServerOptions& options,
                                       const std::optional<ServerTls>& tls,
                                       std::shared_ptr<TokenSource> tokens) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls.has_value()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options.listen, credentials, &port_);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a port already in use
  // and split clients between two databases at random; a taken port must fail Start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const bool auth_on = tokens != nullptr;
  const int token_count = auth_on ? static_cast<int>(tokens->Current()->size()) : 0;
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // A request that does not parse gets INVALID_ARGUMENT rather than gRPC's bare UNIMPLEMENTED.
  interceptors.push_back(std::make_unique<ParseErrorInterceptorFactory>());
  // Decides, before any handler runs, whether each call may run (docs/security.md).
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(std::move(tokens)));
  // Counts and times every call for /metrics; last, so it sees the status the others settled on.
  interceptors.push_back(std::make_unique<MetricsInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  for (grpc::Service* service : std::initializer_list<grpc::Service*>{
           context_service_.get(), conversation_service_.get(), task_state_service_.get(),
           breaker_service_.get(), work_service_.get(), a2a_service_.get(), a2a_v03_service_.get(),
           agent_registry_service_.get(), admin_service_.get()}) {
    builder.RegisterService(service);
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen,
                                               " (is the address valid and the port free?)"));
  }
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  for (const char* name : kServiceNames) health->SetServingStatus(name, true);
  health->SetServingStatus(true);
  address_ = WithPort(options.listen, port_);
  a2a_v03_service_->set_channel(ChannelToSelf(tls.has_value()));
  // Tests and scripts read the port from the "listening on" line, so TLS gets a line of its own.
  if (tls.has_value()) LOG_INFO("gRPC and HTTP take TLS only (%s)", tls->cert_file);
  LOG_INFO("listening on %s", address_);
  if (auth_on) {
    LOG_INFO(
        "authentication on: %d tokens from %s (read again when it changes and on SIGHUP); calls "
        "without a valid bearer token get UNAUTHENTICATED",
        token_count, options.token_file);
    LogRecordsWithoutOwner();
  } else {
    LOG_WARN(
        "authentication off (no --token_file): every caller may do everything, so only "
        "loopback addresses are served");
  }
  return absl::OkStatus();
}

void CoordinatorServer::LogRecordsWithoutOwner() {
  // Records stored before ownership (or while authentication was off) belong to nobody: no agent
  // reaches them (docs/security.md, "Ownership"). Said once at start so that an operator who
  // turns authentication on knows why an agent is refused.
  absl::StatusOr<int64_t> tasks = tasks_->CountUnowned();
  int64_t runs = 0;
  absl::Status counted =
      WorkStore::ForEachRun(*store_, [&runs](const std::string&, const v1::Run& run) {
        if (run.claimants().empty()) ++runs;
        return absl::OkStatus();
      });
  if (!tasks.ok() || !counted.ok()) {
    LOG_WARN("could not count the records without an owner: %s",
             (!tasks.ok() ? tasks.status() : counted).message());
    return;
  }
  if (*tasks == 0 && runs == 0) return;
  LOG_WARN(
      "%d retry tasks without an owner and %d runs without claimants were stored before "
      "ownership or without authentication: only admins change them and no agent reaches them "
      "(readers read them); see docs/security.md, \"Ownership\"",
      *tasks, runs);
}

absl::Status CoordinatorServer::StartBackgroundJobs(const ServerOptions& options) {
  reaper_period_ = options.reaper_period;
  retention_options_ = options.retention;
  if (!etcd_options_.has_value()) {
    RunBackgroundJobs(true);  // the one process of the data set
    return absl::OkStatus();
  }
  // Several replicas may serve this prefix: the jobs run on the one the election picks, and
  // move to another within the TTL when it dies (docs/storage.md, "Several replicas").
  std::string candidate = options.replica_name;
  if (candidate.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
      std::snprintf(host, sizeof(host), "coordinator");
    }
    candidate = absl::StrCat(host, ":", port_);
  }
  LOG_INFO("replica %s campaigns for the background jobs (election TTL %s)", candidate,
           absl::FormatDuration(options.election_ttl));
  ASSIGN_OR_RETURN(election_, storage::EtcdElection::Start(
                                  *etcd_options_, "background", candidate, options.election_ttl,
                                  [this](bool leader) { RunBackgroundJobs(leader); }));
  return absl::OkStatus();
}

void CoordinatorServer::RunBackgroundJobs(bool run) {
  absl::MutexLock lock(&jobs_mu_);
  if (jobs_closed_ || runs_jobs_.load() == run) return;
  if (run) {
    // Its first pass takes back the leases that expired while no replica ran it.
    reaper_ = std::make_unique<Reaper>(work_.get(), reaper_period_);
    // Runs only when --retention_terminal_ttl is set.
    retention_task_ = std::make_unique<RetentionTask>(retention_.get(), retention_options_);
    // Deliveries left queued (by a previous run, or by any replica) resume here.
    gateway_->SetActive(true);
  } else {
    // In-flight agent calls are cancelled; their messages stay queued for the next leader.
    gateway_->SetActive(false);
    reaper_.reset();
    retention_task_.reset();
  }
  runs_jobs_.store(run);
  if (etcd_options_.has_value()) {
    LOG_INFO("%s", run ? "this replica now runs the background jobs (reaper, retention, A2A "
                         "deliveries and webhooks)"
                       : "this replica no longer runs the background jobs");
  }
}

void CoordinatorServer::AbandonElectionForTest() {
  if (election_ != nullptr) election_->AbandonForTest();
}

std::shared_ptr<grpc::Channel> CoordinatorServer::ChannelToSelf(bool tls) {
  // The JSON bindings and the A2A 0.3 service call the gRPC services of this server; its answers
  // may be as large as any.
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(-1);
  // Over loopback TCP when the port is plain: gRPC 1.51's in-process transport runs the server's
  // interceptors on the caller's thread and, under ASan, an early error answer showed a use
  // after free there. With TLS the in-process channel saves a handshake per connection.
  if (tls) return server_->InProcessChannel(channel_args);
  const std::string target = common::LocalDialTarget(address_);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), channel_args);
}

void CoordinatorServer::ServeHttp(const ServerOptions& options, const std::optional<ServerTls>& tls,
                                  std::shared_ptr<TokenSource> tokens) {
  A2AServiceImpl* service = a2a_service_.get();
  a2a_http::HttpBindingOptions binding_options;
  binding_options.max_call_time = options.gateway.stream_timeout;
  binding_options.keepalive = options.http_keepalive;
  cards_ = std::make_unique<RegistryCardSource>(agents_.get(),
                                                [service] { return service->card_addresses(); });
  http_bindings_ = std::make_unique<a2a_http::A2AHttpBindings>(ChannelToSelf(tls.has_value()),
                                                               cards_.get(), binding_options);
  a2a_http::HttpServerOptions http_options;
  http_options.threads = options.http_threads;
  http_options.max_body_bytes = static_cast<size_t>(options.max_request_bytes);
  if (tls.has_value()) http_options.tls = a2a_http::HttpTlsFiles{tls->cert_file, tls->key_file};
  const std::string scheme = tls.has_value() ? "https" : "http";
  a2a_http::A2AHttpBindings* bindings = http_bindings_.get();
  ConsoleParts console;
  console.store = store_.get();
  console.contexts = contexts_.get();
  console.conversations = conversations_.get();
  console.tasks = tasks_.get();
  console.breaker = breaker_.get();
  console.work = work_.get();
  console.a2a_tasks = a2a_tasks_.get();
  console.agents = agents_.get();
  console.contacts = gateway_->contacts();
  console.tokens = std::move(tokens);
  console.feed = console_feed_;
  console.keepalive = options.http_keepalive;
  console_ = std::make_unique<Console>(std::move(console));
  Console* web_console = console_.get();
  absl::StatusOr<std::unique_ptr<a2a_http::HttpServer>> http = a2a_http::HttpServer::Start(
      options.http_listen,
      [bindings, web_console, scheme](httplib::Server& server) {
        // First: the bindings' REST catch-all would take the console's paths.
        web_console->Install(server);
        bindings->Install(server, scheme);
      },
      http_options);
  if (!http.ok()) {
    LOG_WARN("HTTP port not served: %s", http.status().message());
    return;
  }
  card_http_ = *std::move(http);
  CardAddresses addresses = service->card_addresses();
  addresses.http_base_url =
      absl::StrCat(scheme, "://", options.http_listen.substr(0, options.http_listen.rfind(':')),
                   ":", card_http_->port());
  service->set_card_addresses(addresses);
  LOG_INFO("agent card on %s/.well-known/agent-card.json", addresses.http_base_url);
  LOG_INFO("A2A JSON-RPC and HTTP+JSON: each agent at its base URL /agents/<name>");
  LOG_INFO("web console on %s/", addresses.http_base_url);
}

CoordinatorServer::~CoordinatorServer() { Shutdown(absl::Seconds(5)); }

void CoordinatorServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  // No other replica's change is told from here on.
  replica_feed_.reset();
  // The reaper writes to the store, and watch streams never end on their own. The jobs never
  // start again from here on (the election may still call RunBackgroundJobs).
  {
    absl::MutexLock lock(&jobs_mu_);
    jobs_closed_ = true;
    if (reaper_ != nullptr) reaper_->Stop();
    if (retention_task_ != nullptr) retention_task_->Stop();
  }
  if (work_notifier_ != nullptr) {
    work_notifier_->Close(
        absl::UnavailableError("the coordinator is shutting down; watch again once it is back"));
  }
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(grace));
    server_->Wait();
  }
  // Ends the console's event streams, which would otherwise hold the HTTP port's threads.
  if (console_feed_ != nullptr) console_feed_->Close();
  if (card_http_ != nullptr) card_http_->Stop();
  // Cancels in-flight agent calls (their messages stay queued for the next start).
  if (gateway_ != nullptr) gateway_->Stop();
  runs_jobs_.store(false);
  // Only now that no job runs here: resigning lets another replica take the jobs at once.
  election_.reset();
  // No scrape reads the store from here on.
  metrics_.reset();
  pool_.reset();  // runs what is queued, joins the workers
  if (store_ != nullptr) {
    store_.reset();
    LOG_INFO("database closed");
  }
}

void CoordinatorServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace coordinator
