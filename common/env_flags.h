// Every flag of a binary can also be set by an environment variable, as container users expect:
// the variable is the binary's prefix followed by the flag's name in upper case
// (`--data_dir` of the coordinator is COORDINATOR_DATA_DIR). The command line wins over the
// environment: the environment is applied first, then argv is parsed on top of it. Abseil's
// own flags (--flagfile, --help*, --fromenv, ...) are not taken from the environment.
#ifndef COMMON_ENV_FLAGS_H_
#define COMMON_ENV_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace common {

// The environment variable of `flag_name` under `prefix`: "COORDINATOR_" + "data_dir" gives
// "COORDINATOR_DATA_DIR".
std::string EnvVarName(absl::string_view prefix, absl::string_view flag_name);

// What ApplyEnvFlags did.
struct EnvFlagsResult {
  // Variables that set a flag, in the order of `environment`.
  std::vector<std::string> applied;
  // Variables that start with the prefix but name no flag (a typo, most likely).
  std::vector<std::string> unknown;
};

// Sets every flag of this program whose variable appears in `environment` ("NAME=value"
// entries, as in `environ`). A variable that is set counts even when empty. A value the flag
// does not accept is INVALID_ARGUMENT naming the variable and the flag's own error; flags set
// before the bad one keep their new values (the caller is expected to exit).
[[nodiscard]] absl::StatusOr<EnvFlagsResult> ApplyEnvFlags(
    absl::string_view prefix, absl::Span<const std::string> environment);

// ApplyEnvFlags on the process environment.
[[nodiscard]] absl::StatusOr<EnvFlagsResult> ApplyEnvFlagsFromEnviron(absl::string_view prefix);

// `args` (a command line without the program name) with the hyphens of each flag's name made
// underscores where that names a flag of this program (--card-url=x becomes --card_url=x), up to
// a bare "--": evaluation platforms pass their agents' flags with hyphens, Abseil knows them with
// underscores. Everything else is left as it is.
std::vector<std::string> UnderscoreFlagNames(std::vector<std::string> args);

// The start of every binary's main(): sets the usage message (`usage` plus a line about the
// environment variables), applies the environment, parses the command line over it (as
// absl::ParseCommandLine, whose positional arguments it returns; a flag may be written with
// hyphens, see UnderscoreFlagNames), then sets the log format from
// --log_format. A bad environment value prints one line naming the variable and exits with 1,
// as a bad command-line value does; a variable that names no flag is logged as a warning.
std::vector<char*> InitFlags(absl::string_view env_prefix, absl::string_view usage, int argc,
                             char** argv);

}  // namespace common

#endif  // COMMON_ENV_FLAGS_H_
