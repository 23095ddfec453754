// libFuzzer harness: arbitrary bytes as requests to coordinator.v1.Admin (Backup, CollectGarbage,
// ExportContext) of the real coordinator running in this process (fuzz/fuzz_server.h): the first
// byte picks the method, the rest is the serialized request.
//
// Backup writes a checkpoint wherever the request's `dir` says, on the coordinator's file system,
// unless --backup_root confines it (storage/backup.h). The harness's coordinator has
// --backup_root=<scratch>/backups/root, and so that a fuzzed Backup could only write inside this
// process's scratch dir even if that check failed, a Backup input is parsed here and its `dir`
// moved under <scratch>/backups before it is sent: "/x/y" becomes "<scratch>/backups/x/y" (and a
// relative "x", which the server would refuse, "<scratch>/backups/x"); an input that does not
// parse as a BackupRequest is not sent at all. So "/root/..." is inside the backup root and
// anything else outside it, where the server must refuse: a Backup that succeeds outside the
// root is a finding. Everything else about the path (`.`/`..` components, control characters,
// length, a missing parent, trailing slashes) reaches the server as the fuzzer made it. The
// backups are removed after each call.
//
// ExportContext and CollectGarbage need something stored to read and delete: a small evaluation
// (a context with a command, its conversation, its retry state and a break, a work run) is written
// through the other services at start, and again before a CollectGarbage once one has deleted it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/v1/admin.pb.h"
#include "coordinator/v1/breaker.pb.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/conversation.pb.h"
#include "coordinator/v1/task_state.pb.h"
#include "coordinator/v1/work.pb.h"
#include "fuzz/fuzz_server.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace {

namespace v1 = coordinator::v1;
namespace pb = google::protobuf;

constexpr char kAdmin[] = "coordinator.v1.Admin";
constexpr char kContextId[] = "ctx-1";

// Sends `request` to `service`.`method` through the harness and returns the status code (an
// INTERNAL, UNKNOWN or DATA_LOSS answer aborts, as for a fuzzed input).
int Send(const char* service, const char* method, const pb::Message& request) {
  const pb::MethodDescriptor* m =
      pb::DescriptorPool::generated_pool()->FindServiceByName(service)->FindMethodByName(method);
  const std::string bytes =
      absl::StrCat(std::string(1, static_cast<char>(m->index())), request.SerializeAsString());
  return fuzzing::CallService(service, reinterpret_cast<const uint8_t*>(bytes.data()),
                              bytes.size());
}

// Writes the evaluation ExportContext and CollectGarbage work on, unless its context exists (so
// that its conversation does not grow with every call).
void Populate() {
  v1::CreateContextRequest create;
  create.mutable_context()->set_context_id(kContextId);
  create.mutable_context()->set_agent("green");
  if (Send("coordinator.v1.ContextService", "CreateContext", create) != 0) return;
  v1::RecordCommandRequest command;
  command.set_context_id(kContextId);
  command.set_command("make test");
  command.set_exit_code(2);
  Send("coordinator.v1.ContextService", "RecordCommand", command);
  // Completed, so that retention may collect it (the version the command left is not known here).
  for (int version = 1; version <= 3; ++version) {
    v1::UpdateContextRequest update;
    update.mutable_context()->set_context_id(kContextId);
    update.mutable_context()->set_version(version);
    update.mutable_context()->set_status(v1::CONTEXT_STATUS_COMPLETED);
    update.mutable_update_mask()->add_paths("status");
    Send("coordinator.v1.ContextService", "UpdateContext", update);
  }
  v1::AppendMessageRequest message;
  message.set_context_id(kContextId);
  message.set_role(v1::ROLE_USER);
  message.set_text("hello");
  message.set_tokens(5);
  Send("coordinator.v1.ConversationService", "AppendMessage", message);
  // The retry state the export includes by itself, with a failure and a break.
  const std::string description = absl::StrCat("rca-eval ", kContextId);
  v1::InitTaskRequest init;
  init.set_description(description);
  Send("coordinator.v1.TaskStateService", "InitTask", init);
  v1::RecordFailureRequest failure;
  failure.set_task_id(coordinator::TaskIdForDescription(description));
  failure.set_error("Timeout after 30s");
  Send("coordinator.v1.TaskStateService", "RecordFailure", failure);
  v1::BreakRequest brk;
  brk.set_task_id(failure.task_id());
  brk.set_reason("loop");
  Send("coordinator.v1.BreakerService", "Break", brk);
  v1::CreateRunRequest run;
  run.mutable_run()->set_run_id("r1");
  run.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  run.add_items()->set_item_id("a");
  Send("coordinator.v1.WorkService", "CreateRun", run);
}

// Where fuzzed backups go: <scratch>/backups, holding only the empty backup root between inputs.
const std::string& BackupsDir() {
  static const std::string* dir = new std::string(fuzzing::ScratchDir() + "/backups");
  return *dir;
}

void ResetBackupsDir() {
  std::error_code ec;
  std::filesystem::remove_all(BackupsDir(), ec);
  std::filesystem::create_directories(fuzzing::BackupRoot(), ec);
  if (ec) {
    std::fprintf(stderr, "cannot create %s: %s\n", fuzzing::BackupRoot().c_str(),
                 ec.message().c_str());
    std::abort();
  }
}

// True when `dir` names something strictly under `root` once repeated and trailing slashes are
// dropped (the harness's dirs hold no links, and `.`/`..` components are refused anyway).
bool StrictlyUnder(const std::string& path, const std::string& root) {
  std::string dir = std::filesystem::path(path).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string prefix = root + "/";
  return dir.compare(0, prefix.size(), prefix) == 0 && dir.size() > prefix.size();
}

void FuzzBackup(const uint8_t* data, size_t size) {
  v1::BackupRequest request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return;
  const std::string& dir = request.dir();
  request.set_dir(absl::StrCat(BackupsDir(), (!dir.empty() && dir[0] == '/') ? "" : "/", dir));
  const std::string bytes =
      absl::StrCat(std::string(1, static_cast<char>(data[0])), request.SerializeAsString());
  const int code =
      fuzzing::CallService(kAdmin, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (code == 0 && !StrictlyUnder(request.dir(), fuzzing::BackupRoot())) {
    std::fprintf(stderr, "Backup wrote %s, outside --backup_root=%s\n", request.dir().c_str(),
                 fuzzing::BackupRoot().c_str());
    std::abort();
  }
  ResetBackupsDir();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ResetBackupsDir();
  Populate();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const pb::ServiceDescriptor* admin =
      pb::DescriptorPool::generated_pool()->FindServiceByName(kAdmin);
  const pb::MethodDescriptor* method = admin->method(data[0] % admin->method_count());
  if (method->name() == "Backup") {
    FuzzBackup(data, size);
    return 0;
  }
  if (method->name() == "CollectGarbage") Populate();
  return fuzzing::FuzzService(kAdmin, data, size);
}
