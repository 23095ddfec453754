#include "fuzz/fuzz_server.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/server.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"

namespace fuzzing {
namespace {

// Most messages read from one server-streaming call before it is cancelled.
constexpr int kMaxStreamMessages = 64;

struct Method {
  std::string path;  // "/package.Service/Method"; RpcMethod keeps a pointer into it
  bool server_streaming = false;
  bool client_streaming = false;
};

struct Harness {
  std::string data_dir;  // the scratch dir; the store is in <data_dir>/data
  coordinator::CoordinatorServer* server = nullptr;  // never deleted: lives until exit
  std::shared_ptr<grpc::Channel> channel;
};

std::string* DataDirToRemove() {
  static std::string* dir = new std::string();
  return dir;
}

void RemoveDataDir() {
  std::error_code ec;
  if (!DataDirToRemove()->empty()) std::filesystem::remove_all(*DataDirToRemove(), ec);
}

bool& HttpWanted() {
  static bool wanted = false;
  return wanted;
}

std::string BackupRootOf(const std::string& scratch) { return scratch + "/backups/root"; }

// Starts the coordinator on first use. Writes are not synced: durability is the torture tool's
// subject, and an fsync per input would only slow the fuzzer down.
Harness& GetHarness() {
  static Harness* harness = [] {
    auto* h = new Harness();
    std::string tmpl = (std::filesystem::temp_directory_path() / "coordfuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    h->data_dir = tmpl;
    *DataDirToRemove() = tmpl;
    std::atexit(RemoveDataDir);
    coordinator::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.http_listen = "";
    if (HttpWanted()) {
      options.http_listen = "127.0.0.1:0";
      options.http_keepalive = absl::Milliseconds(200);
      options.gateway.stream_timeout = absl::Seconds(1);
    }
    options.data_dir = tmpl + "/data";
    options.sync_writes = false;
    options.worker_threads = 4;
    // Admin.Backup may write only under <scratch>/backups/root (fuzz_admin_service.cc).
    std::error_code ec;
    std::filesystem::create_directories(BackupRootOf(tmpl), ec);
    if (ec) {
      std::fprintf(stderr, "cannot create the backup root: %s\n", ec.message().c_str());
      std::abort();
    }
    options.backup_root = BackupRootOf(tmpl);
    absl::StatusOr<std::unique_ptr<coordinator::CoordinatorServer>> server =
        coordinator::CoordinatorServer::Start(std::move(options));
    if (!server.ok()) {
      std::fprintf(stderr, "cannot start the coordinator: %s\n",
                   server.status().ToString().c_str());
      std::abort();
    }
    h->server = server->release();
    h->channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", h->server->port()),
                                     grpc::InsecureChannelCredentials());
    return h;
  }();
  return *harness;
}

// The methods of `service_name`, from the descriptors linked into this binary.
const std::vector<Method>& MethodsOf(const char* service_name) {
  static auto* cache = new std::map<std::string, std::vector<Method>>();
  auto it = cache->find(service_name);
  if (it != cache->end()) return it->second;
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_name);
  if (service == nullptr) {
    std::fprintf(stderr, "unknown service %s\n", service_name);
    std::abort();
  }
  std::vector<Method> methods;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* m = service->method(i);
    methods.push_back(Method{absl::StrCat("/", service->full_name(), "/", m->name()),
                             m->server_streaming(), m->client_streaming()});
  }
  return cache->emplace(service_name, std::move(methods)).first->second;
}

void CheckStatus(const Method& method, const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DATA_LOSS:
      std::fprintf(stderr, "%s answered %d: %s\n", method.path.c_str(),
                   static_cast<int>(status.error_code()), status.error_message().c_str());
      std::abort();
    default:
      break;
  }
}

}  // namespace

void EnableHttpPort() { HttpWanted() = true; }

int GrpcPort() { return GetHarness().server->port(); }

int HttpPort() { return GetHarness().server->http_port(); }

const std::string& ScratchDir() { return GetHarness().data_dir; }

std::string BackupRoot() { return BackupRootOf(ScratchDir()); }

int FuzzService(const char* service_name, const uint8_t* data, size_t size) {
  CallService(service_name, data, size);
  return 0;
}

int CallService(const char* service_name, const uint8_t* data, size_t size) {
  if (size == 0) return grpc::StatusCode::INVALID_ARGUMENT;
  const std::vector<Method>& methods = MethodsOf(service_name);
  const Method& method = methods[data[0] % methods.size()];
  if (method.client_streaming) {  // none of ours are; nothing to send them this way
    return grpc::StatusCode::UNIMPLEMENTED;
  }
  Harness& harness = GetHarness();

  grpc::Slice slice(data + 1, size - 1);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ClientContext context;
  if (!method.server_streaming) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::ByteBuffer response;
    const grpc::internal::RpcMethod rpc(method.path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
    const grpc::Status status =
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            harness.channel.get(), rpc, &context, request, &response);
    CheckStatus(method, status);
    return status.error_code();
  }
  // A stream (a watch, a subscription) may stay open for as long as it is wanted: read what
  // comes within a short deadline, and count the deadline as the normal end.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  const grpc::internal::RpcMethod rpc(method.path.c_str(),
                                      grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(harness.channel.get(), rpc,
                                                                    &context, request));
  grpc::ByteBuffer message;
  for (int i = 0; i < kMaxStreamMessages && reader->Read(&message); ++i) {
  }
  context.TryCancel();
  const grpc::Status status = reader->Finish();
  CheckStatus(method, status);
  return status.error_code();
}

}  // namespace fuzzing
