#include "coordinator/rpc/auth.h"

#include <openssl/sha.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "google/protobuf/util/json_util.h"

namespace coordinator {
namespace {

// Shorter tokens are refused at start: they can be guessed.
constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 4096;

std::string Sha256(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

bool VisibleAscii(absl::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

struct MethodPermission {
  const char* method;
  Permission permission;
};

// Every RPC of ours that is not admin-only. Anything missing here is admin-only.
constexpr MethodPermission kMethods[] = {
    {"/coordinator.v1.ContextService/CreateContext", Permission::kAgent},
    {"/coordinator.v1.ContextService/GetContext", Permission::kRead},
    {"/coordinator.v1.ContextService/UpdateContext", Permission::kAgent},
    {"/coordinator.v1.ContextService/DeleteContext", Permission::kAgent},
    {"/coordinator.v1.ContextService/ListContexts", Permission::kRead},
    {"/coordinator.v1.ContextService/RecordCommand", Permission::kAgent},
    {"/coordinator.v1.ContextService/ListCommands", Permission::kRead},
    {"/coordinator.v1.ConversationService/AppendMessage", Permission::kAgent},
    {"/coordinator.v1.ConversationService/GetConversation", Permission::kRead},
    // Readers export everything; an agent what it may read (the handler checks).
    {"/coordinator.v1.Admin/ExportContext", Permission::kRead},
    // Retry state and the breaker: a task belongs to the principal that initialized it; the
    // stores check it (docs/security.md). Cleanup and import: an admin, or the owner.
    {"/coordinator.v1.TaskStateService/InitTask", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/GetTaskState", Permission::kRead},
    {"/coordinator.v1.TaskStateService/GetTaskField", Permission::kRead},
    {"/coordinator.v1.TaskStateService/SetTaskField", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/IncrementAttempt", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/GetTier", Permission::kRead},
    {"/coordinator.v1.TaskStateService/Escalate", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/RecordFailure", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/RecordQualityGate", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/GetFailureContext", Permission::kRead},
    {"/coordinator.v1.TaskStateService/ListTasks", Permission::kRead},
    {"/coordinator.v1.TaskStateService/CleanupTask", Permission::kAgent},
    {"/coordinator.v1.TaskStateService/ImportTask", Permission::kAgent},
    {"/coordinator.v1.BreakerService/CheckLoop", Permission::kAgent},  // logged: a write
    {"/coordinator.v1.BreakerService/AnalyzeLoop", Permission::kAgent},
    {"/coordinator.v1.BreakerService/ForceEscalate", Permission::kAgent},
    {"/coordinator.v1.BreakerService/Break", Permission::kAgent},
    {"/coordinator.v1.BreakerService/GetBreakerStatus", Permission::kRead},
    {"/coordinator.v1.BreakerService/GetBreakSummary", Permission::kRead},
    {"/coordinator.v1.BreakerService/ReadBreakerLog", Permission::kRead},
    {"/coordinator.v1.BreakerService/Cleanup", Permission::kAgent},
    // Workers are agents: the run's claimants claim its items, and a lease is the capability
    // for its item. Runs are made by admins.
    {"/coordinator.v1.WorkService/GetRun", Permission::kRead},
    {"/coordinator.v1.WorkService/ListRuns", Permission::kRead},
    {"/coordinator.v1.WorkService/ListItems", Permission::kRead},
    {"/coordinator.v1.WorkService/GetItem", Permission::kRead},
    {"/coordinator.v1.WorkService/WatchRun", Permission::kRead},
    {"/coordinator.v1.WorkService/Claim", Permission::kAgent},
    {"/coordinator.v1.WorkService/Heartbeat", Permission::kAgent},
    {"/coordinator.v1.WorkService/Checkpoint", Permission::kAgent},
    {"/coordinator.v1.WorkService/Complete", Permission::kAgent},
    {"/coordinator.v1.WorkService/Fail", Permission::kAgent},
    {"/coordinator.v1.WorkService/ListWorkers", Permission::kRead},
    {"/coordinator.v1.WorkService/ListEvents", Permission::kRead},
    {"/coordinator.v1.WorkService/StopWorker", Permission::kAgent},  // a claimant (the store)
    // CreateRun, ImportTaskGraph, ImportRun, Retry, AddItems, MergeLevel: admin.
    {"/coordinator.v1.AgentRegistry/RegisterAgent", Permission::kAgent},  // its own name
    {"/coordinator.v1.AgentRegistry/GetAgent", Permission::kRead},
    {"/coordinator.v1.AgentRegistry/ListAgents", Permission::kRead},
    {"/coordinator.v1.AgentRegistry/DeleteAgent", Permission::kAgent},  // its own name
    {"/lf.a2a.v1.A2AService/SendMessage", Permission::kAgent},
    {"/lf.a2a.v1.A2AService/SendStreamingMessage", Permission::kAgent},
    {"/lf.a2a.v1.A2AService/GetTask", Permission::kRead},
    {"/lf.a2a.v1.A2AService/ListTasks", Permission::kRead},
    {"/lf.a2a.v1.A2AService/CancelTask", Permission::kAgent},
    {"/lf.a2a.v1.A2AService/SubscribeToTask", Permission::kRead},
    {"/lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig", Permission::kAgent},
    {"/lf.a2a.v1.A2AService/GetTaskPushNotificationConfig", Permission::kRead},
    {"/lf.a2a.v1.A2AService/ListTaskPushNotificationConfigs", Permission::kRead},
    {"/lf.a2a.v1.A2AService/DeleteTaskPushNotificationConfig", Permission::kAgent},
    {"/lf.a2a.v1.A2AService/GetExtendedAgentCard", Permission::kRead},
    // A2A 0.3's service relays each call to the 1.0 one with the caller's credentials, where
    // the same rules apply again to what the call touches.
    {"/a2a.v1.A2AService/SendMessage", Permission::kAgent},
    {"/a2a.v1.A2AService/SendStreamingMessage", Permission::kAgent},
    {"/a2a.v1.A2AService/GetTask", Permission::kRead},
    {"/a2a.v1.A2AService/CancelTask", Permission::kAgent},
    {"/a2a.v1.A2AService/TaskSubscription", Permission::kRead},
    {"/a2a.v1.A2AService/CreateTaskPushNotificationConfig", Permission::kAgent},
    {"/a2a.v1.A2AService/GetTaskPushNotificationConfig", Permission::kRead},
    {"/a2a.v1.A2AService/ListTaskPushNotificationConfig", Permission::kRead},
    {"/a2a.v1.A2AService/DeleteTaskPushNotificationConfig", Permission::kAgent},
    {"/a2a.v1.A2AService/GetAgentCard", Permission::kRead},
};

bool IsParty(const Caller& caller, const v1::TaskContext& context) {
  for (const std::string& party : context.parties()) {
    if (party == caller.principal) return true;
  }
  return false;
}

absl::Status Denied(const Caller& caller, absl::string_view what) {
  return absl::PermissionDeniedError(
      absl::StrCat(RoleName(caller.role), " ", caller.principal, " may not ", what));
}

}  // namespace

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  if (name == "admin") return Role::kAdmin;
  if (name == "agent") return Role::kAgent;
  if (name == "reader") return Role::kReader;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role \"", name, "\" (expected admin, agent or reader)"));
}

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
    case Role::kReader:
      return "reader";
  }
  return "unknown";
}

Permission RequiredPermission(absl::string_view method) {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<std::string, Permission>();
    for (const MethodPermission& m : kMethods) t->emplace(m.method, m.permission);
    return t;
  }();
  auto it = table->find(method);
  return it == table->end() ? Permission::kAdmin : it->second;
}

bool RoleAllows(Role role, Permission permission) {
  switch (permission) {
    case Permission::kOpen:
    case Permission::kRead:
      return true;
    case Permission::kAgent:
      return role == Role::kAgent || role == Role::kAdmin;
    case Permission::kAdmin:
      return role == Role::kAdmin;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromFile(
    const std::string& path, std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("token file ", path, ": cannot read it"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, ": read error"));
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = FromJson(text.str());
  if (!authorizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, ": ", authorizer.status().message()));
  }
  struct stat st;
  if (warnings != nullptr && ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
    warnings->push_back(absl::StrCat("token file ", path,
                                     " can be read by every user of this machine; chmod 600 it"));
  }
  return authorizer;
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromJson(absl::string_view json) {
  v1::TokenFile file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &file, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a token file (", parsed.message().as_string(),
                     "); expected {\"tokens\": [{\"token\": ..., \"principal\": ..., "
                     "\"role\": \"admin|agent|reader\", \"expiresAt\": optional RFC 3339}]}"));
  }
  return FromProto(file);
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromProto(const v1::TokenFile& file) {
  if (file.tokens().empty()) return absl::InvalidArgumentError("it has no tokens");
  std::unique_ptr<Authorizer> authorizer(new Authorizer());
  absl::flat_hash_map<std::string, Role> roles;
  for (int i = 0; i < file.tokens_size(); ++i) {
    const v1::TokenEntry& entry = file.tokens(i);
    const std::string where = absl::StrCat("tokens[", i, "]");
    if (entry.token().size() < kMinTokenBytes || entry.token().size() > kMaxTokenBytes ||
        !VisibleAscii(entry.token())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": the token must be ", kMinTokenBytes, " to ", kMaxTokenBytes,
          " visible ASCII characters without spaces (openssl rand -hex 32 makes one)"));
    }
    if (entry.principal().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": principal is empty"));
    }
    if (absl::Status s = common::ValidateId("principal", entry.principal()); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
    }
    absl::StatusOr<Role> role = ParseRole(entry.role());
    if (!role.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", role.status().message()));
    }
    auto [it, inserted] = roles.emplace(entry.principal(), *role);
    if (!inserted && it->second != *role) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": principal ", entry.principal(),
                                                     " already has role ", RoleName(it->second)));
    }
    Entry e{entry.principal(), *role, absl::InfiniteFuture()};
    if (entry.has_expires_at()) {
      if (entry.expires_at().nanos() < 0 || entry.expires_at().nanos() > 999999999) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expiresAt is not a valid time"));
      }
      e.expires_at = absl::FromUnixSeconds(entry.expires_at().seconds()) +
                     absl::Nanoseconds(entry.expires_at().nanos());
    }
    if (!authorizer->tokens_.emplace(Sha256(entry.token()), std::move(e)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the same token appears twice (for ", entry.principal(), ")"));
    }
  }
  return authorizer;
}

absl::StatusOr<Caller> Authorizer::Authenticate(absl::Span<const absl::string_view> authorization,
                                                absl::Time now) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "this coordinator requires a token: send the metadata \"authorization: Bearer <token>\"");
  }
  if (authorization.size() > 1) {
    return absl::UnauthenticatedError("more than one authorization metadata entry");
  }
  absl::string_view value = authorization[0];
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError(
        "malformed authorization metadata: expected \"Bearer <token>\"");
  }
  const absl::string_view token = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
  if (token.empty()) {
    return absl::UnauthenticatedError("malformed authorization metadata: the token is empty");
  }
  std::string digest = Sha256(token);
  auto it = tokens_.find(digest);
  if (it == tokens_.end()) return absl::UnauthenticatedError("the token is not known");
  if (now >= it->second.expires_at) {
    return absl::UnauthenticatedError(
        absl::StrCat("the token of ", it->second.principal, " has expired"));
  }
  Caller caller;
  caller.authenticated = true;
  caller.principal = it->second.principal;
  caller.role = it->second.role;
  caller.token_digest = std::move(digest);
  caller.token_expires_at = it->second.expires_at;
  return caller;
}

bool Authorizer::Accepts(const std::string& token_digest, const std::string& principal, Role role,
                         absl::Time now) const {
  auto it = tokens_.find(token_digest);
  return it != tokens_.end() && now < it->second.expires_at && it->second.principal == principal &&
         it->second.role == role;
}

absl::StatusOr<Caller> Authorizer::Authorize(absl::string_view method,
                                             absl::Span<const absl::string_view> authorization,
                                             absl::Time now) const {
  const Permission permission = RequiredPermission(method);
  if (permission == Permission::kOpen) return Caller{};
  ASSIGN_OR_RETURN(Caller caller, Authenticate(authorization, now));
  if (!RoleAllows(caller.role, permission)) {
    return absl::PermissionDeniedError(
        absl::StrCat(RoleName(caller.role), " ", caller.principal, " may not call ", method,
                     permission == Permission::kAdmin ? " (admin only)" : " (read-only role)"));
  }
  return caller;
}

absl::Status CheckContextRead(const Caller& caller, const v1::TaskContext& context) {
  if (caller.unrestricted() || caller.role == Role::kReader) return absl::OkStatus();
  if (context.agent() == caller.principal || IsParty(caller, context)) return absl::OkStatus();
  return Denied(caller, absl::StrCat("read context ", context.context_id(),
                                     ": it is neither its owner nor a party"));
}

absl::Status CheckNewContext(const Caller& caller, v1::TaskContext* context) {
  if (context->parties_size() > kMaxParties) {
    return absl::ResourceExhaustedError(absl::StrCat("context names ", context->parties_size(),
                                                     " parties; the limit is ", kMaxParties));
  }
  absl::flat_hash_set<std::string> seen;
  for (const std::string& party : context->parties()) {
    RETURN_IF_ERROR(common::ValidateId("party", party));
    if (!seen.insert(party).second) {
      return absl::InvalidArgumentError(absl::StrCat("party ", party, " is named twice"));
    }
  }
  if (caller.unrestricted()) return absl::OkStatus();
  if (context->agent().empty()) context->set_agent(caller.principal);
  if (caller.role != Role::kAgent || context->agent() != caller.principal) {
    return Denied(caller, absl::StrCat("create a context owned by \"", context->agent(), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckContextUpdate(const Caller& caller, const v1::UpdateContextRequest& request) {
  if (caller.unrestricted()) return absl::OkStatus();
  bool changes_agent = request.update_mask().paths().empty();
  for (const std::string& path : request.update_mask().paths()) {
    if (path == "agent") changes_agent = true;
  }
  if (changes_agent && request.context().agent() != caller.principal) {
    return Denied(caller, absl::StrCat("hand context ", request.context().context_id(), " to \"",
                                       request.context().agent(), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckContextList(const Caller& caller, std::string* agent_filter) {
  if (caller.unrestricted() || caller.role == Role::kReader) return absl::OkStatus();
  if (agent_filter->empty()) *agent_filter = caller.principal;
  if (*agent_filter != caller.principal) {
    return Denied(caller, absl::StrCat("list the contexts of ", *agent_filter));
  }
  return absl::OkStatus();
}

Access AccessOf(const Caller& caller) {
  Access access;
  access.principal = caller.principal;
  access.scoped = caller.scoped();
  return access;
}

absl::Status CheckAgentName(const Caller& caller, absl::string_view name) {
  if (caller.unrestricted()) return absl::OkStatus();
  if (caller.role == Role::kAgent && name == caller.principal) return absl::OkStatus();
  return Denied(caller, absl::StrCat("register or delete agent \"", name, "\""));
}

}  // namespace coordinator
