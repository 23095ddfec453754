// coordctl token new: a fresh bearer token as the token file's JSON entry (docs/security.md).
// Nothing is sent anywhere: the administrator adds the line to the file, and the coordinator
// reads the file again by itself (it watches the file, and SIGHUP asks it to).
#include <sys/random.h>

#include <ostream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/validation.h"
#include "coordctl/cli.h"
#include "coordinator/v1/auth.pb.h"

namespace coordctl {
namespace {

constexpr size_t kTokenBytes = 32;  // 256 bits, printed as 64 hex digits

int RunTokenNew(const Env& env, const ParsedArgs& args) {
  const std::string principal = args.get("principal");
  const std::string role = args.get("role", "agent");
  if (principal.empty()) return Fail(env, "token new needs --principal NAME", kExitUsage);
  if (absl::Status valid = common::ValidateId("principal", principal); !valid.ok()) {
    return Fail(env, std::string(valid.message()), kExitUsage);
  }
  if (role != "admin" && role != "agent" && role != "reader") {
    return Fail(env, absl::StrCat("--role is admin, agent or reader, not \"", role, "\""),
                kExitUsage);
  }
  coordinator::v1::TokenEntry entry;
  if (args.has("valid_for")) {
    absl::StatusOr<absl::Duration> valid_for = ParseDurationArg("valid_for", args.get("valid_for"));
    if (!valid_for.ok()) return Fail(env, std::string(valid_for.status().message()), kExitUsage);
    if (*valid_for <= absl::ZeroDuration()) {
      return Fail(env, "--valid_for must be longer than zero", kExitUsage);
    }
    const absl::Time expires = absl::Now() + *valid_for;
    entry.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(expires));
  }
  std::string random(kTokenBytes, '\0');
  for (size_t filled = 0; filled < random.size();) {
    const ssize_t n = getrandom(random.data() + filled, random.size() - filled, 0);
    if (n <= 0) return Fail(env, "cannot read random bytes from the kernel (getrandom)");
    filled += static_cast<size_t>(n);
  }
  entry.set_token(absl::BytesToHexString(random));
  entry.set_principal(principal);
  entry.set_role(role);
  *env.out << ToJson(entry) << std::endl;
  return kExitOk;
}

}  // namespace

void AddTokenCommands(std::vector<Command>* commands) {
  commands->push_back(
      {{"token", "new"},
       "--principal NAME [--role admin|agent|reader] [--valid_for DURATION]",
       "print a new random bearer token as a token-file entry (JSON line) to add to "
       "--token_file; the coordinator picks the change up by itself",
       {"principal", "role", "valid_for"},
       {},
       0,
       0,
       false,
       RunTokenNew});
}

}  // namespace coordctl
