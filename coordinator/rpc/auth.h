// Authentication and authorization of coordinator calls (docs/security.md), without gRPC: the
// token file, the table of what each RPC needs, and the ownership rules of contexts and agent
// registrations. The gRPC side (coordinator/rpc/auth_interceptor.h) feeds it the method name and
// the `authorization` metadata of each call and hands the resulting Caller to the handlers.
#ifndef COORDINATOR_RPC_AUTH_H_
#define COORDINATOR_RPC_AUTH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "coordinator/store/records/access.h"
#include "coordinator/v1/auth.pb.h"
#include "coordinator/v1/context.pb.h"

namespace coordinator {

enum class Role { kAdmin, kAgent, kReader };

// "admin", "agent" or "reader".
[[nodiscard]] absl::StatusOr<Role> ParseRole(absl::string_view name);
absl::string_view RoleName(Role role);

// What a method requires of its caller.
enum class Permission {
  kOpen,   // anyone, even without a token (nothing of ours is open today)
  kRead,   // any role
  kAgent,  // agent or admin; the handler checks ownership
  kAdmin,  // admin only
};

// The permission of a full gRPC method name ("/coordinator.v1.ContextService/GetContext").
// Methods that are not in the table are admin-only, so an RPC added without an entry is
// closed to everyone else by default.
Permission RequiredPermission(absl::string_view method);

// Who is calling, as far as the handlers are concerned.
struct Caller {
  // False when the coordinator runs without a token file: the caller may do everything.
  bool authenticated = false;
  // The principal of the token (empty when not authenticated).
  std::string principal;
  Role role = Role::kAdmin;
  // The SHA-256 of the token the caller presented, and when it expires (InfiniteFuture when it
  // does not): what TokenSource needs to end the caller's streams when the token goes.
  std::string token_digest;
  absl::Time token_expires_at = absl::InfiniteFuture();

  // May do everything: no authentication configured, or an admin.
  bool unrestricted() const { return !authenticated || role == Role::kAdmin; }
  // An agent: reaches only what it owns or takes part in.
  bool scoped() const { return authenticated && role == Role::kAgent; }
};

class Authorizer {
 public:
  // Reads a token file (JSON, see protos/coordinator/v1/auth.proto). Fails with a message that
  // names the file and the problem: unreadable, not the expected JSON (unknown fields too), no
  // tokens, an empty or short token, a duplicate token, an empty or invalid principal, an
  // unknown role, or one principal with two roles. `warnings` gets advice that does not stop
  // the start (a file that other users can read).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authorizer>> FromFile(
      const std::string& path, std::vector<std::string>* warnings = nullptr);
  // The same from the file's text.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authorizer>> FromJson(absl::string_view json);
  // From parsed entries (validated the same way).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Authorizer>> FromProto(
      const v1::TokenFile& file);

  // The caller behind the `authorization` metadata values of one call (normally exactly one,
  // "Bearer <token>"). UNAUTHENTICATED when there is none, more than one, it is not a bearer
  // token, or the token is unknown or expired at `now`. The message never repeats the token.
  [[nodiscard]] absl::StatusOr<Caller> Authenticate(
      absl::Span<const absl::string_view> authorization, absl::Time now) const;

  // Authenticate, then check the caller's role against RequiredPermission(method):
  // PERMISSION_DENIED when it falls short. kOpen methods need no token at all.
  [[nodiscard]] absl::StatusOr<Caller> Authorize(absl::string_view method,
                                                 absl::Span<const absl::string_view> authorization,
                                                 absl::Time now) const;

  // Whether the token with SHA-256 `token_digest` is still valid at `now` for `principal` in
  // `role`: false once it is gone from the file, expired, or given to another principal or role.
  bool Accepts(const std::string& token_digest, const std::string& principal, Role role,
               absl::Time now) const;

  // Number of tokens.
  size_t size() const { return tokens_.size(); }

 private:
  struct Entry {
    std::string principal;
    Role role;
    absl::Time expires_at;  // InfiniteFuture when the token does not expire
  };
  Authorizer() = default;

  // Keyed by the SHA-256 of the token: the tokens themselves are not kept, and a lookup's
  // timing depends on the hash of what was presented, not on how much of a token matched.
  absl::flat_hash_map<std::string, Entry> tokens_;
};

// Whether a role may call a method that requires `permission`.
bool RoleAllows(Role role, Permission permission);

// Ownership rules for callers that are not unrestricted (agents; readers only read). The owner
// of a context is its `agent`; its `parties` take part in it.

// Reading a context, its commands or its conversation: the owner or a party (readers and
// admins read everything).
[[nodiscard]] absl::Status CheckContextRead(const Caller& caller, const v1::TaskContext& context);
// Changing a context and writing its conversation: the stores check those inside their
// transactions (coordinator/store/contexts/context_access.h, with AccessOf(caller)).
// A context an agent creates is its own: `agent` empty becomes the principal, another name is
// refused. Checks `parties` for every caller (valid ids, at most kMaxParties).
[[nodiscard]] absl::Status CheckNewContext(const Caller& caller, v1::TaskContext* context);
// An update must not hand the context to someone else: when the mask (empty = all) changes
// `agent`, an agent can only set its own name.
[[nodiscard]] absl::Status CheckContextUpdate(const Caller& caller,
                                              const v1::UpdateContextRequest& request);
// Listing contexts: an agent lists its own (an empty agent filter becomes the principal).
[[nodiscard]] absl::Status CheckContextList(const Caller& caller, std::string* agent_filter);
// Registering or deleting the agent `name`: an agent principal only its own name.
[[nodiscard]] absl::Status CheckAgentName(const Caller& caller, absl::string_view name);

// What the stores need of a caller to apply the ownership of retry tasks, breaker records and
// runs (coordinator/store/records/access.h): its principal, and whether it is scoped (an agent).
Access AccessOf(const Caller& caller);

// Most parties a context may name.
inline constexpr int kMaxParties = 16;

}  // namespace coordinator

#endif  // COORDINATOR_RPC_AUTH_H_
