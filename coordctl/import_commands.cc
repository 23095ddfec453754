// coordctl import aria ...: loads the ARIA task-state scripts' JSON state files into the
// coordinator. Each file is read with a size bound, parsed through Protobuf's JSON mapping
// (aria_state_json.h) and loaded with one ImportTask call; a file that cannot be loaded is
// reported by name and skipped, and the others still load.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/cli.h"
#include "coordinator/v1/task_state.grpc.pb.h"

namespace coordctl {
namespace {

// Most files one directory argument may contribute; a bound on a hostile directory.
constexpr size_t kMaxFilesPerDirectory = 100000;

// The files named by `paths`: files as given, directories replaced by their *.json files
// (not recursive), in name order.
absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths,
                                                     const Env& env, int* failures) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!absl::EndsWith(name, ".json")) continue;
      if (found.size() == kMaxFilesPerDirectory) {
        Fail(env, absl::StrCat(path, ": more than ", kMaxFilesPerDirectory,
                               " .json files; import it in parts"));
        ++*failures;
        break;
      }
      found.push_back(it->path().string());
    }
    if (ec) {
      Fail(env, absl::StrCat(path, ": cannot list the directory: ", ec.message()));
      ++*failures;
      continue;
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

int RunImportAria(const Env& env, const ParsedArgs& args) {
  int failures = 0;
  absl::StatusOr<std::vector<std::string>> files = ExpandPaths(args.positional, env, &failures);
  if (!files.ok()) return Fail(env, std::string(files.status().message()));
  auto stub = coordinator::v1::TaskStateService::NewStub(env.channel);
  int imported = 0;
  for (const std::string& file : *files) {
    absl::StatusOr<std::string> text = ReadBoundedFile(file, kMaxAriaStateFileBytes);
    absl::StatusOr<coordinator::v1::TaskState> state =
        text.ok() ? ParseAriaStateJson(*text)
                  : absl::StatusOr<coordinator::v1::TaskState>(text.status());
    if (!state.ok()) {
      Fail(env, absl::StrCat(file, ": skipped: ", state.status().message()));
      ++failures;
      continue;
    }
    coordinator::v1::ImportTaskRequest request;
    *request.mutable_state() = *std::move(state);
    request.set_replace(args.flag("replace"));
    // The tasks' owner (docs/security.md): the named principal, or the caller's own.
    request.mutable_state()->set_owner(args.get("owner"));
    coordinator::v1::ImportTaskResponse response;
    grpc::Status s = stub->ImportTask(env.NewContext().get(), request, &response);
    if (!s.ok()) {
      Fail(env, absl::StrCat(file, ": skipped: ", s.error_message()));
      ++failures;
      if (s.error_code() == grpc::StatusCode::UNAVAILABLE) break;  // no point going on
      continue;
    }
    *env.out << (response.replaced() ? "replaced " : "imported ") << response.task_id() << " from "
             << file << "\n";
    ++imported;
  }
  *env.out << imported << " imported, " << failures << " skipped" << std::endl;
  return failures == 0 ? kExitOk : kExitError;
}

}  // namespace

void AddImportCommands(std::vector<Command>* commands) {
  commands->push_back({{"import", "aria"},
                       "<state files or directories...> [--replace] [--owner PRINCIPAL]",
                       "load the ARIA scripts' JSON state files (a directory: its *.json "
                       "files); bad files are reported and skipped; --replace overwrites "
                       "tasks that exist; --owner gives the tasks to that principal (default: "
                       "yours; an agent only its own)",
                       {"owner"},
                       {"replace"},
                       1,
                       -1,
                       false,
                       RunImportAria});
}

}  // namespace coordctl
