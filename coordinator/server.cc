#include "coordinator/server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace coordinator {
namespace {

// Services whose health is reported individually as well as under "".
constexpr const char* kServiceNames[] = {
    "coordinator.v1.ContextService",
    "coordinator.v1.ConversationService",
};

std::string WithPort(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return absl::StrCat(listen, ":", port);
  return absl::StrCat(listen.substr(0, colon), ":", port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    ServerOptions options) {
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  storage::StoreOptions store_options;
  store_options.path = options.data_dir;
  store_options.sync_writes = options.sync_writes;
  ASSIGN_OR_RETURN(server->store_, storage::RocksStore::Open(store_options));
  LOG_INFO("opened database %s (schema version %d, %s writes)", options.data_dir,
           server->store_->schema_version(), options.sync_writes ? "WAL-synced" : "unsynced");

  server->pool_ = std::make_unique<common::ThreadPool>(options.worker_threads);
  server->contexts_ = std::make_unique<ContextStore>(server->store_.get(), options.limits);
  server->conversations_ =
      std::make_unique<ConversationStore>(server->store_.get(), options.limits);
  server->context_service_ =
      std::make_unique<ContextServiceImpl>(server->contexts_.get(), server->pool_.get());
  server->conversation_service_ = std::make_unique<ConversationServiceImpl>(
      server->conversations_.get(), server->pool_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.RegisterService(server->context_service_.get());
  builder.RegisterService(server->conversation_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen,
                     " (is the address valid and the port free?)"));
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  for (const char* name : kServiceNames) health->SetServingStatus(name, true);
  health->SetServingStatus(true);
  server->address_ = WithPort(options.listen, server->port_);
  LOG_INFO("listening on %s", server->address_);
  return server;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(absl::Seconds(5)); }

void CoordinatorServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(grace));
    server_->Wait();
  }
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
