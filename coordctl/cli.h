// The command framework of coordctl: each command declares its words, its options and how many
// positional arguments it takes; the parser checks a command line against that declaration.
// (absl flags are process-global and cannot repeat an option, so subcommands parse here.)
#ifndef COORDCTL_CLI_H_
#define COORDCTL_CLI_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"

namespace coordctl {

// Exit codes. Scripts depend on them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNo = 1;     // NOT_FOUND, or a command's "no" answer
inline constexpr int kExitUsage = 2;  // the command line is wrong
inline constexpr int kExitError = 3;  // any other failure (server unreachable, bad input, ...)

struct ParsedArgs {
  std::vector<std::string> positional;
  // --name value / --name=value; an option may repeat.
  absl::flat_hash_map<std::string, std::vector<std::string>> options;
  absl::flat_hash_set<std::string> switches;
  // Everything after a bare "--".
  std::vector<std::string> rest;

  bool has(const std::string& name) const { return options.contains(name); }
  // The last value of option `name`, or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  bool flag(const std::string& name) const { return switches.contains(name); }
  // Free text given either way: the positional argument at `index`, or else the words after
  // "--" joined by spaces (`task fail <id> "the error"` or `task fail <id> -- the error`).
  std::string free_text(size_t index) const;
};

// What every command runs with.
struct Env {
  std::shared_ptr<grpc::Channel> channel;
  absl::Duration timeout;
  std::ostream* out;
  std::ostream* err;
  // A client context with the call deadline set.
  std::unique_ptr<grpc::ClientContext> NewContext() const;
  // The same for a call of the A2A service, which also names the A2A version it speaks.
  std::unique_ptr<grpc::ClientContext> NewA2AContext() const;
};

struct Command {
  std::vector<std::string> words;           // e.g. {"context", "put"}
  std::string usage;                        // arguments after the words, for help
  std::string help;                         // one line
  std::vector<std::string> value_options;   // options that take a value
  std::vector<std::string> switch_options;  // options that take none
  int min_positional = 0;
  int max_positional = 0;   // -1: no limit
  bool takes_rest = false;  // accepts "-- words..."
  std::function<int(const Env&, const ParsedArgs&)> run;
};

// Parses `args` (the words after the command's own words) against `command`.
[[nodiscard]] absl::StatusOr<ParsedArgs> ParseArgs(const Command& command,
                                                   const std::vector<std::string>& args);

// Calls a List method page after page (`request` as the first page asks, then with each
// answer's next_page_token) until the last page, handing each answer to `each`; the status of
// the first call that failed, OK after the last page. Each call's context comes from
// `new_context` (Env::NewA2AContext for the A2A service). For example
//   ForEachPage(env, *stub, &WorkService::Stub::ListRuns, request,
//               [&](ListRunsResponse& page) { ... });
template <typename Stub, typename Request, typename Response, typename Each>
grpc::Status ForEachPage(const Env& env, Stub& stub,
                         grpc::Status (Stub::*list)(grpc::ClientContext*, const Request&,
                                                    Response*),
                         Request request, Each each,
                         std::unique_ptr<grpc::ClientContext> (Env::*new_context)()
                             const = &Env::NewContext) {
  do {
    Response page;
    grpc::Status s = (stub.*list)((env.*new_context)().get(), request, &page);
    if (!s.ok()) return s;
    each(page);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return grpc::Status::OK;
}

// Prints one line for a failed call on env.err and returns the exit code: kExitNo for
// NOT_FOUND ("not found: ..."), kExitError otherwise.
int ReportRpcError(const Env& env, const grpc::Status& status);

// Prints "coordctl: <message>" on env.err and returns kExitError (or `code`).
int Fail(const Env& env, const std::string& message, int code = kExitError);

// Parses a duration such as "30s", "1.5m", "250ms". INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<absl::Duration> ParseDurationArg(const std::string& name,
                                                              const std::string& value);
// Parses a base-10 integer. INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<int64_t> ParseIntArg(const std::string& name,
                                                  const std::string& value);

// Protobuf's JSON mapping of `message`, on one line.
std::string ToJson(const google::protobuf::Message& message);

// `text` on one line, for listings and error messages: control characters (newlines) shown as
// spaces, surrounding white space dropped.
std::string OneLine(std::string text);

// Each command group registers its commands here (see context_commands.cc, ...).
void AddA2ACommands(std::vector<Command>* commands);
void AddAdminCommands(std::vector<Command>* commands);
void AddAgentCommands(std::vector<Command>* commands);
void AddContextCommands(std::vector<Command>* commands);
void AddConversationCommands(std::vector<Command>* commands);
void AddHealthCommands(std::vector<Command>* commands);
void AddTaskCommands(std::vector<Command>* commands);
void AddBreakerCommands(std::vector<Command>* commands);
void AddImportCommands(std::vector<Command>* commands);
void AddRunCommands(std::vector<Command>* commands);
// run work (run_work.cc; AddRunCommands adds it).
void AddRunWorkCommand(std::vector<Command>* commands);
// import arial, import mahabharatha, run export (run_io_commands.cc).
void AddRunIoCommands(std::vector<Command>* commands);
// scenario run, show, cancel (scenario_commands.cc).
void AddScenarioCommands(std::vector<Command>* commands);
void AddTokenCommands(std::vector<Command>* commands);

}  // namespace coordctl

#endif  // COORDCTL_CLI_H_
