// coordctl import aria ...: loads the ARIA scripts' files into the coordinator: the task-state
// script's JSON state files, and the iteration breaker's blocked registry (blocked.json) with
// the <id>-summary.txt files beside it. Each file is read with a size bound and parsed through
// Protobuf's JSON mapping (aria_state_json.h). The registry is read whole before anything is
// loaded (a bad registry or summary loads nothing); then each task is one ImportTask call,
// carrying its state and its registry entry together, so a task is never loaded half blocked.
// A state file that cannot be loaded is reported by name and skipped, and the others still load.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "absl/container/flat_hash_map.h"
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

// The name the breaker script gave its registry; a file of that name is read as one.
constexpr char kBlockedRegistryName[] = "blocked.json";

bool IsBlockedRegistry(const std::string& path) {
  return std::filesystem::path(path).filename() == kBlockedRegistryName;
}

// The blocks of the registry at `path`, each with its summary file's text when there is one
// (`<dir>/<id>-summary.txt`). Any error refuses the whole registry.
absl::StatusOr<std::vector<coordinator::v1::ImportedBlock>> ReadBlockedRegistry(
    const std::string& path) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxAriaBlockedFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<coordinator::v1::ImportedBlock>> blocks = ParseAriaBlockedJson(*text);
  if (!blocks.ok()) return blocks.status();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (coordinator::v1::ImportedBlock& block : *blocks) {
    const std::string summary_path =
        (dir / absl::StrCat(block.entry().task_id(), "-summary.txt")).string();
    absl::StatusOr<std::string> summary = ReadBoundedFile(summary_path, kMaxAriaSummaryFileBytes);
    if (absl::IsNotFound(summary.status())) continue;  // the registry's values still load
    if (!summary.ok()) {
      return absl::Status(summary.status().code(),
                          absl::StrCat(summary_path, ": ", summary.status().message()));
    }
    block.set_summary(*std::move(summary));
  }
  return blocks;
}

int RunImportAria(const Env& env, const ParsedArgs& args) {
  int failures = 0;
  absl::StatusOr<std::vector<std::string>> files = ExpandPaths(args.positional, env, &failures);
  if (!files.ok()) return Fail(env, std::string(files.status().message()));

  // The registry first: its entries join the state files of the same tasks.
  std::vector<std::string> state_files;
  std::string registry_path;
  std::vector<coordinator::v1::ImportedBlock> blocks;
  for (const std::string& file : *files) {
    if (!IsBlockedRegistry(file)) {
      state_files.push_back(file);
      continue;
    }
    if (!registry_path.empty()) {
      return Fail(env, absl::StrCat("two blocked registries (", registry_path, ", ", file,
                                    "); import them one at a time; nothing imported"));
    }
    registry_path = file;
  }
  if (!registry_path.empty()) {
    absl::StatusOr<std::vector<coordinator::v1::ImportedBlock>> read =
        ReadBlockedRegistry(registry_path);
    if (!read.ok()) {
      return Fail(env,
                  absl::StrCat(registry_path, ": ", read.status().message(), "; nothing imported"));
    }
    blocks = *std::move(read);
  }
  absl::flat_hash_map<std::string, size_t> block_of;  // task id -> index in blocks
  for (size_t i = 0; i < blocks.size(); ++i) block_of[blocks[i].entry().task_id()] = i;
  std::vector<bool> block_used(blocks.size(), false);

  auto stub = coordinator::v1::TaskStateService::NewStub(env.channel);
  int imported = 0;
  bool unavailable = false;
  // One ImportTask; false (after reporting) when it was refused.
  auto import = [&](coordinator::v1::ImportTaskRequest request, const std::string& source) {
    request.set_replace(args.flag("replace"));
    // The tasks' owner (docs/security.md): the named principal, or the caller's own.
    request.mutable_state()->set_owner(args.get("owner"));
    coordinator::v1::ImportTaskResponse response;
    grpc::Status s = stub->ImportTask(env.NewContext().get(), request, &response);
    if (!s.ok()) {
      Fail(env, absl::StrCat(source, ": skipped: ", s.error_message()));
      ++failures;
      unavailable = s.error_code() == grpc::StatusCode::UNAVAILABLE;  // no point going on
      return;
    }
    *env.out << (response.replaced() ? "replaced " : "imported ")
             << (request.has_block() ? "blocked " : "") << response.task_id() << " from " << source
             << "\n";
    ++imported;
  };

  for (const std::string& file : state_files) {
    if (unavailable) break;
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
    std::string source = file;
    if (auto it = block_of.find(request.state().task_id()); it != block_of.end()) {
      *request.mutable_block() = blocks[it->second];
      block_used[it->second] = true;
      absl::StrAppend(&source, " and ", registry_path);
    }
    import(std::move(request), source);
  }
  // Registry entries whose state file was not given: the entry alone, as the script's status
  // still listed it.
  for (size_t i = 0; i < blocks.size() && !unavailable; ++i) {
    if (block_used[i]) continue;
    coordinator::v1::ImportTaskRequest request;
    *request.mutable_block() = blocks[i];
    import(std::move(request), registry_path);
  }
  *env.out << imported << " imported, " << failures << " skipped" << std::endl;
  return failures == 0 ? kExitOk : kExitError;
}

}  // namespace

void AddImportCommands(std::vector<Command>* commands) {
  commands->push_back({{"import", "aria"},
                       "<state files, blocked.json or directories...> [--replace] "
                       "[--owner PRINCIPAL]",
                       "load the ARIA scripts' JSON state files (a directory: its *.json "
                       "files) and the breaker's blocked.json with the <id>-summary.txt files "
                       "beside it; bad state files are reported and skipped, a bad registry "
                       "loads nothing; --replace overwrites tasks that exist; --owner gives the "
                       "tasks to that principal (default: yours; an agent only its own)",
                       {"owner"},
                       {"replace"},
                       1,
                       -1,
                       false,
                       RunImportAria});
}

}  // namespace coordctl
