#include "coordinator/server.h"

#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "coordinator/rpc/auth_interceptor.h"
#include "coordinator/rpc/parse_error_interceptor.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "storage/backup.h"

namespace coordinator {
namespace {

// Services whose health is reported individually as well as under "".
constexpr const char* kServiceNames[] = {
    "coordinator.v1.ContextService",   "coordinator.v1.ConversationService",
    "coordinator.v1.TaskStateService", "coordinator.v1.BreakerService",
    "coordinator.v1.WorkService",      "lf.a2a.v1.A2AService",
    "coordinator.v1.AgentRegistry",    "coordinator.v1.Admin",
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

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(ServerOptions options) {
  if (options.reaper_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("reaper_period must be positive");
  }
  RETURN_IF_ERROR(ValidateTierLadder(options.task_state.tier_ladder));
  RETURN_IF_ERROR(ValidateBreakerOptions(options.breaker));
  std::shared_ptr<const Authorizer> authorizer;
  if (!options.token_file.empty()) {
    std::vector<std::string> warnings;
    ASSIGN_OR_RETURN(std::unique_ptr<Authorizer> loaded,
                     Authorizer::FromFile(options.token_file, &warnings));
    for (const std::string& warning : warnings) LOG_WARN("%s", warning);
    authorizer = std::move(loaded);
  } else {
    RETURN_IF_ERROR(RequireLoopback("--listen", options.listen));
    if (!options.http_listen.empty()) {
      RETURN_IF_ERROR(RequireLoopback("--http_listen", options.http_listen));
    }
  }
  if (options.limits.max_page_size < 1 || options.max_streams < 1 ||
      options.stream_queue_limit < 1) {
    return absl::InvalidArgumentError(
        "max_page_size, max_streams and stream_queue_limit must be positive");
  }
  // One --max_page_size for every coordinator.v1 listing.
  options.task_state.max_page_size = options.limits.max_page_size;
  options.breaker.max_log_page_size = options.limits.max_page_size;
  options.work_limits.max_page_size = options.limits.max_page_size;
  ASSIGN_OR_RETURN(const std::optional<ServerTls> tls,
                   LoadServerTls(options.tls_cert_file, options.tls_key_file));
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  storage::StoreOptions store_options;
  store_options.path = options.data_dir;
  store_options.sync_writes = options.sync_writes;
  RETURN_IF_ERROR(ValidateRetentionOptions(options.retention));
  if (!options.backup_root.empty()) {
    std::error_code ec;
    if (options.backup_root.front() != '/' ||
        !std::filesystem::is_directory(options.backup_root, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--backup_root must be an absolute path to an existing directory, not ",
                       options.backup_root));
    }
  }
  if (!options.restore_from.empty()) {
    RETURN_IF_ERROR(storage::RestoreBackup(options.restore_from, options.data_dir));
    LOG_INFO("restored the backup %s into %s", options.restore_from, options.data_dir);
  }
  ASSIGN_OR_RETURN(server->store_, storage::RocksStore::Open(store_options));
  LOG_INFO("opened database %s (schema version %d, %s writes)", options.data_dir,
           server->store_->schema_version(), options.sync_writes ? "WAL-synced" : "unsynced");

  server->pool_ =
      std::make_unique<common::ThreadPool>(options.worker_threads, options.max_queued_calls);
  server->contexts_ = std::make_unique<ContextStore>(server->store_.get(), options.limits);
  server->conversations_ =
      std::make_unique<ConversationStore>(server->store_.get(), options.limits);
  server->context_service_ =
      std::make_unique<ContextServiceImpl>(server->contexts_.get(), server->pool_.get());
  server->conversation_service_ = std::make_unique<ConversationServiceImpl>(
      server->conversations_.get(), server->contexts_.get(), server->pool_.get());
  server->tasks_ = std::make_unique<TaskStateStore>(server->store_.get(), options.task_state);
  server->breaker_ =
      std::make_unique<Breaker>(server->store_.get(), server->tasks_.get(), options.breaker);
  server->task_state_service_ =
      std::make_unique<TaskStateServiceImpl>(server->tasks_.get(), server->pool_.get());
  server->breaker_service_ =
      std::make_unique<BreakerServiceImpl>(server->breaker_.get(), server->pool_.get());
  server->work_notifier_ = std::make_unique<WorkNotifier>();
  server->work_ = std::make_unique<WorkStore>(server->store_.get(), server->work_notifier_.get(),
                                              options.work_limits);
  server->stream_slots_ = std::make_unique<StreamSlots>(options.max_streams);
  server->work_service_ =
      std::make_unique<WorkServiceImpl>(server->work_.get(), server->work_notifier_.get(),
                                        server->pool_.get(), options.stream_queue_limit);
  server->work_service_->set_stream_slots(server->stream_slots_.get());
  server->a2a_notifier_ = std::make_unique<TaskNotifier>();
  server->a2a_tasks_ = std::make_unique<A2ATasks>(server->store_.get(), server->a2a_notifier_.get(),
                                                  options.limits, options.a2a_store);
  server->a2a_deliveries_ =
      std::make_unique<A2ADeliveryQueue>(server->store_.get(), server->a2a_notifier_.get());
  server->a2a_push_ =
      std::make_unique<A2APush>(server->store_.get(), options.limits, options.a2a_store);
  server->agents_ = std::make_unique<AgentRegistryStore>(server->store_.get());
  server->gateway_ = std::make_unique<A2AGateway>(
      server->a2a_tasks_.get(), server->a2a_deliveries_.get(), server->a2a_push_.get(),
      server->agents_.get(), server->a2a_notifier_.get(), options.gateway);
  A2AGateway* gateway = server->gateway_.get();
  server->agents_->set_on_register(
      [gateway](const v1::Agent& agent) { gateway->AgentRegistered(agent.name()); });
  server->a2a_service_ =
      std::make_unique<A2AServiceImpl>(server->a2a_tasks_.get(), server->a2a_push_.get(),
                                       server->agents_.get(), gateway, server->pool_.get(), "");
  server->a2a_service_->set_stream_limits(server->stream_slots_.get(),
                                          static_cast<size_t>(options.stream_queue_limit));
  server->agent_registry_service_ =
      std::make_unique<AgentRegistryServiceImpl>(server->agents_.get(), server->pool_.get());
  server->exporter_ = std::make_unique<Exporter>(server->store_.get(), options.limits,
                                                 options.task_state, options.breaker);
  server->retention_ = std::make_unique<Retention>(server->store_.get());
  server->admin_service_ = std::make_unique<AdminServiceImpl>(
      server->store_.get(), options.data_dir, options.backup_root, server->exporter_.get(),
      server->retention_.get(), options.retention, server->pool_.get());

  server->metrics_ = std::make_unique<ServerMetrics>(server->store_.get(), server->work_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls.has_value()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options.listen, credentials, &server->port_);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a port already in use
  // and split clients between two databases at random; a taken port must fail Start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A request that does not parse gets INVALID_ARGUMENT rather than gRPC's bare UNIMPLEMENTED.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<ParseErrorInterceptorFactory>());
  // Decides, before any handler runs, whether each call may run (docs/security.md).
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(authorizer));
  // Counts and times every call for /metrics; last, so it sees the status the others settled on.
  interceptors.push_back(std::make_unique<MetricsInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(server->context_service_.get());
  builder.RegisterService(server->conversation_service_.get());
  builder.RegisterService(server->task_state_service_.get());
  builder.RegisterService(server->breaker_service_.get());
  builder.RegisterService(server->work_service_.get());
  builder.RegisterService(server->a2a_service_.get());
  builder.RegisterService(server->agent_registry_service_.get());
  builder.RegisterService(server->admin_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen,
                                               " (is the address valid and the port free?)"));
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  for (const char* name : kServiceNames) health->SetServingStatus(name, true);
  health->SetServingStatus(true);
  server->address_ = WithPort(options.listen, server->port_);
  // Tests and scripts read the port from the "listening on" line, so TLS gets a line of its own.
  if (tls.has_value()) LOG_INFO("gRPC and HTTP take TLS only (%s)", tls->cert_file);
  LOG_INFO("listening on %s", server->address_);
  if (authorizer != nullptr) {
    LOG_INFO(
        "authentication on: %d tokens from %s; calls without a valid bearer token get "
        "UNAUTHENTICATED",
        static_cast<int>(authorizer->size()), options.token_file);
  } else {
    LOG_WARN(
        "authentication off (no --token_file): every caller may do everything, so only "
        "loopback addresses are served");
  }
  server->a2a_service_->set_bearer_auth(authorizer != nullptr);
  // Its first pass takes back the leases that expired while the coordinator was down.
  server->reaper_ = std::make_unique<Reaper>(server->work_.get(), options.reaper_period);
  // Runs only when --retention_terminal_ttl is set.
  server->retention_task_ =
      std::make_unique<RetentionTask>(server->retention_.get(), options.retention);
  // The card's interface URL: an absolute https URL when the port takes TLS (as A2A asks of
  // secured interfaces), else the plain host:port that gRPC clients dial.
  const std::string card_url =
      tls.has_value() ? absl::StrCat("https://", server->address_) : server->address_;
  server->a2a_service_->set_grpc_address(card_url);
  // Deliveries queued before a restart resume here.
  server->gateway_->Start();
  if (!options.http_listen.empty()) {
    AgentRegistryStore* agents = server->agents_.get();
    const std::string grpc_address = card_url;
    absl::StatusOr<std::unique_ptr<AgentCardHttpServer>> http = AgentCardHttpServer::Start(
        options.http_listen,
        [agents, grpc_address, authorizer]() -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(lf::a2a::v1::AgentCard card,
                           CoordinatorCard(agents, grpc_address, authorizer != nullptr));
          std::string json;
          (void)google::protobuf::util::MessageToJsonString(card, &json);
          return json;
        },
        tls.has_value() ? HttpTlsFiles{tls->cert_file, tls->key_file} : HttpTlsFiles{});
    if (http.ok()) {
      server->card_http_ = *std::move(http);
      LOG_INFO("agent card on %s://%s:%d/.well-known/agent-card.json",
               tls.has_value() ? "https" : "http",
               options.http_listen.substr(0, options.http_listen.rfind(':')),
               server->card_http_->port());
    } else {
      LOG_WARN("agent card not served: %s", http.status().message());
    }
  }
  return server;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(absl::Seconds(5)); }

void CoordinatorServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  // The reaper writes to the store, and watch streams never end on their own.
  if (reaper_ != nullptr) reaper_->Stop();
  if (retention_task_ != nullptr) retention_task_->Stop();
  if (work_notifier_ != nullptr) {
    work_notifier_->Close(
        absl::UnavailableError("the coordinator is shutting down; watch again once it is back"));
  }
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(grace));
    server_->Wait();
  }
  if (card_http_ != nullptr) card_http_->Stop();
  // Cancels in-flight agent calls (their messages stay queued for the next start).
  if (gateway_ != nullptr) gateway_->Stop();
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
