// Writes the seed corpus of the service harnesses: valid requests of each method, serialized,
// behind the byte that picks the method (fuzz/fuzz_server.h). Run by hand after a proto change:
//   build-asan/bin/fuzz_make_corpus fuzz/corpus
// The parser harnesses' seeds (key codec, task graph, ARIA state files) are plain files kept in
// fuzz/corpus/ as they are.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "absl/strings/str_cat.h"
#include "coordinator/v1/admin.pb.h"
#include "coordinator/v1/agent_registry.pb.h"
#include "coordinator/v1/breaker.pb.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/conversation.pb.h"
#include "coordinator/v1/task_state.pb.h"
#include "coordinator/v1/work.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "storage/key_codec.h"

namespace {

namespace v1 = coordinator::v1;
namespace pb = google::protobuf;

std::string g_root;

void WriteFile(const std::string& harness, const std::string& name, const std::string& bytes) {
  const std::string dir = absl::StrCat(g_root, "/", harness);
  std::filesystem::create_directories(dir);
  std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << bytes;
}

// One seed: the method's index as the first byte, then the request given in text format.
template <typename Request>
void Seed(const char* harness, const char* service, const char* method, int n,
          const std::string& text) {
  const pb::ServiceDescriptor* s = pb::DescriptorPool::generated_pool()->FindServiceByName(service);
  const pb::MethodDescriptor* m = s == nullptr ? nullptr : s->FindMethodByName(method);
  Request request;
  if (m == nullptr || !pb::TextFormat::ParseFromString(text, &request)) {
    std::fprintf(stderr, "bad seed %s.%s: %s\n", service, method, text.c_str());
    std::exit(1);
  }
  WriteFile(
      harness, absl::StrCat(method, "-", n),
      absl::StrCat(std::string(1, static_cast<char>(m->index())), request.SerializeAsString()));
}

void ServiceSeeds() {
  const char* h = "fuzz_context_service";
  const char* s = "coordinator.v1.ContextService";
  Seed<v1::CreateContextRequest>(
      h, s, "CreateContext", 1,
      R"(context { context_id: "ctx-1" agent: "green" workspace_dir: "/ws" labels { key: "k" value: "v" } })");
  Seed<v1::GetContextRequest>(h, s, "GetContext", 1, R"(context_id: "ctx-1")");
  Seed<v1::UpdateContextRequest>(
      h, s, "UpdateContext", 1,
      R"(context { context_id: "ctx-1" version: 1 status: CONTEXT_STATUS_COMPLETED } update_mask { paths: "status" })");
  Seed<v1::RecordCommandRequest>(
      h, s, "RecordCommand", 1,
      R"(context_id: "ctx-1" command: "make test" exit_code: 2 duration { seconds: 1 } output_digest: "sha256:00")");
  Seed<v1::ListCommandsRequest>(h, s, "ListCommands", 1, R"(context_id: "ctx-1" page_size: 2)");
  Seed<v1::ListContextsRequest>(h, s, "ListContexts", 1, R"(agent: "green" page_size: 1)");
  Seed<v1::DeleteContextRequest>(h, s, "DeleteContext", 1, R"(context_id: "ctx-1" version: 3)");

  h = "fuzz_conversation_service";
  s = "coordinator.v1.ConversationService";
  Seed<v1::AppendMessageRequest>(h, s, "AppendMessage", 1,
                                 R"(context_id: "c" role: ROLE_USER text: "hello" tokens: 5)");
  Seed<v1::AppendMessageRequest>(
      h, s, "AppendMessage", 2,
      R"(context_id: "c" role: ROLE_AGENT text: "execute: ls" tokens: 9)");
  Seed<v1::GetConversationRequest>(h, s, "GetConversation", 1,
                                   R"(context_id: "c" tail: 1 page_size: 1)");

  h = "fuzz_task_state_service";
  s = "coordinator.v1.TaskStateService";
  // The id of "Fix the login bug" (first 8 hex characters of its SHA-256).
  const std::string id = R"(task_id: "257cb146")";
  Seed<v1::InitTaskRequest>(h, s, "InitTask", 1, R"(description: "Fix the login bug")");
  Seed<v1::GetTaskStateRequest>(h, s, "GetTaskState", 1, id);
  Seed<v1::GetTaskFieldRequest>(h, s, "GetTaskField", 1, id + R"( field: "failures")");
  Seed<v1::SetTaskFieldRequest>(h, s, "SetTaskField", 1, id + R"( field: "owner" value: "me")");
  Seed<v1::IncrementAttemptRequest>(h, s, "IncrementAttempt", 1, id);
  Seed<v1::GetTierRequest>(h, s, "GetTier", 1, id);
  Seed<v1::EscalateRequest>(h, s, "Escalate", 1, id + R"( reason: "timeout" steps: 2)");
  Seed<v1::RecordFailureRequest>(h, s, "RecordFailure", 1, id + R"( error: "Timeout after 30s")");
  Seed<v1::RecordQualityGateRequest>(h, s, "RecordQualityGate", 1,
                                     id + R"( check: "tests" passed: false detail: "2 failed")");
  Seed<v1::GetFailureContextRequest>(h, s, "GetFailureContext", 1, id + " tail: 2");
  Seed<v1::ListTasksRequest>(h, s, "ListTasks", 1, "page_size: 1");
  Seed<v1::CleanupTaskRequest>(h, s, "CleanupTask", 1, id);
  Seed<v1::ImportTaskRequest>(
      h, s, "ImportTask", 1,
      R"(state { task_id: "257cb146" description: "Fix the login bug" attempt_count: 2 model_tier: 2 failures { attempt: 1 error: "Timeout" model: "codex-mini" tier: 1 } escalation_log { reason: "r" from_tier: 1 to_tier: 2 } custom_fields { key: "k" value: "v" } } replace: true)");

  h = "fuzz_breaker_service";
  s = "coordinator.v1.BreakerService";
  Seed<v1::CheckLoopRequest>(h, s, "CheckLoop", 1, id);
  Seed<v1::AnalyzeLoopRequest>(h, s, "AnalyzeLoop", 1, id);
  Seed<v1::ForceEscalateRequest>(h, s, "ForceEscalate", 1, id + R"( reason: "stuck")");
  Seed<v1::BreakRequest>(h, s, "Break", 1, id + R"( reason: "loop")");
  Seed<v1::GetBreakerStatusRequest>(h, s, "GetBreakerStatus", 1, "");
  Seed<v1::GetBreakSummaryRequest>(h, s, "GetBreakSummary", 1, id);
  Seed<v1::CleanupBreakerRequest>(h, s, "Cleanup", 1, id);
  Seed<v1::ReadBreakerLogRequest>(h, s, "ReadBreakerLog", 1, "");

  h = "fuzz_work_service";
  s = "coordinator.v1.WorkService";
  Seed<v1::CreateRunRequest>(
      h, s, "CreateRun", 1,
      R"(run { run_id: "r1" kind: RUN_KIND_WORKSTREAMS retry_policy { max_attempts: 2 } } items { item_id: "a" title: "A" } items { item_id: "b" level: 1 dependencies: "a" owned_files: "x.c" })");
  Seed<v1::ImportTaskGraphRequest>(
      h, s, "ImportTaskGraph", 1,
      R"(run_id: "g1" graph_json: "{\"feature\": \"f\", \"tasks\": [{\"id\": \"T-1\", \"level\": 0, \"files\": {\"create\": [\"a.c\"]}}, {\"id\": \"T-2\", \"level\": 1, \"dependencies\": [\"T-1\"]}]}")");
  Seed<v1::GetRunRequest>(h, s, "GetRun", 1, R"(run_id: "r1")");
  Seed<v1::ListRunsRequest>(h, s, "ListRuns", 1, "page_size: 1");
  Seed<v1::ListItemsRequest>(h, s, "ListItems", 1, R"(run_id: "r1" page_size: 1)");
  Seed<v1::GetItemRequest>(h, s, "GetItem", 1, R"(run_id: "r1" item_id: "a")");
  Seed<v1::ClaimRequest>(h, s, "Claim", 1,
                         R"(run_id: "r1" worker_id: "w1" lease_ttl { seconds: 30 })");
  // A lease token is base64url of LeaseToken{run_id, item_id, epoch}.
  const std::string lease = R"(lease: "CgJyMRIBYRgB")";  // r1 / a / epoch 1
  Seed<v1::HeartbeatRequest>(h, s, "Heartbeat", 1, lease + R"( progress: "half")");
  Seed<v1::CheckpointRequest>(h, s, "Checkpoint", 1, lease + R"( note: "commit abc")");
  Seed<v1::CompleteRequest>(h, s, "Complete", 1, lease + R"( summary: "done")");
  Seed<v1::FailRequest>(h, s, "Fail", 1, lease + R"( error: "tests fail" retryable: true)");
  Seed<v1::RetryRequest>(h, s, "Retry", 1, R"(run_id: "r1" item_id: "a")");
  Seed<v1::WatchRunRequest>(h, s, "WatchRun", 1, R"(run_id: "r1")");

  h = "fuzz_agent_registry_service";
  s = "coordinator.v1.AgentRegistry";
  Seed<v1::RegisterAgentRequest>(h, s, "RegisterAgent", 1,
                                 R"(agent { name: "echo" endpoint: "127.0.0.1:1" })");
  Seed<v1::GetAgentRequest>(h, s, "GetAgent", 1, R"(name: "echo")");
  Seed<v1::ListAgentsRequest>(h, s, "ListAgents", 1, "");
  Seed<v1::DeleteAgentRequest>(h, s, "DeleteAgent", 1, R"(name: "echo")");

  h = "fuzz_a2a_service";
  s = "lf.a2a.v1.A2AService";
  Seed<lf::a2a::v1::SendMessageRequest>(
      h, s, "SendMessage", 1,
      R"(tenant: "echo" message { message_id: "m1" context_id: "c1" role: ROLE_USER parts { text: "hi" } })");
  Seed<lf::a2a::v1::GetTaskRequest>(h, s, "GetTask", 1, R"(id: "t1" history_length: 2)");
  Seed<lf::a2a::v1::ListTasksRequest>(h, s, "ListTasks", 1, R"(context_id: "c1" page_size: 1)");
  Seed<lf::a2a::v1::CancelTaskRequest>(h, s, "CancelTask", 1, R"(id: "t1")");
  Seed<lf::a2a::v1::SubscribeToTaskRequest>(h, s, "SubscribeToTask", 1, R"(id: "t1")");
  Seed<lf::a2a::v1::GetExtendedAgentCardRequest>(h, s, "GetExtendedAgentCard", 1, "");
  Seed<lf::a2a::v1::GetTaskPushNotificationConfigRequest>(h, s, "GetTaskPushNotificationConfig", 1,
                                                          R"(task_id: "t1" id: "p1")");
  Seed<lf::a2a::v1::ListTaskPushNotificationConfigsRequest>(h, s, "ListTaskPushNotificationConfigs",
                                                            1, R"(task_id: "t1")");
  Seed<lf::a2a::v1::DeleteTaskPushNotificationConfigRequest>(
      h, s, "DeleteTaskPushNotificationConfig", 1, R"(task_id: "t1" id: "p1")");

  // The harness moves a backup dir under its own scratch dir, where "/root" is the server's
  // --backup_root (fuzz/fuzz_admin_service.cc).
  h = "fuzz_admin_service";
  s = "coordinator.v1.Admin";
  Seed<v1::BackupRequest>(h, s, "Backup", 1, R"(dir: "/root/backup-1")");
  Seed<v1::BackupRequest>(h, s, "Backup", 2, R"(dir: "/root/missing-parent/backup-2/")");
  Seed<v1::BackupRequest>(h, s, "Backup", 3, R"(dir: "/outside-the-root")");
  Seed<v1::CollectGarbageRequest>(h, s, "CollectGarbage", 1,
                                  R"(dry_run: true older_than { nanos: 1 } max_deletes: 5)");
  Seed<v1::CollectGarbageRequest>(h, s, "CollectGarbage", 2,
                                  R"(older_than { seconds: 0 nanos: 1000 } max_deletes: 1)");
  Seed<v1::ExportContextRequest>(h, s, "ExportContext", 1,
                                 R"(context_id: "ctx-1" retry_task_ids: "257cb146")");
}

void KeySeeds() {
  // Schedule length - 1, the schedule (0 byte, 1 string, 2 uint64), then the key.
  const std::string work_lease = storage::KeyBuilder(0x40)
                                     .AddUint64(1700000000000000)
                                     .AddString("run-1")
                                     .AddString("item-1")
                                     .key();
  WriteFile("fuzz_key_codec", "lease", absl::StrCat(std::string(1, 2), "\x02\x01\x01", work_lease));
  const std::string context = storage::KeyBuilder(0x10).AddString("ctx").AddUint64(7).key();
  WriteFile("fuzz_key_codec", "context", absl::StrCat(std::string(1, 1), "\x01\x02", context));
  WriteFile("fuzz_key_codec", "truncated",
            absl::StrCat(std::string(1, 0), "\x01", context.substr(0, 6)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  ServiceSeeds();
  KeySeeds();
  return 0;
}
