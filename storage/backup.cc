#include "storage/backup.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace storage {
namespace {

namespace fs = std::filesystem;

bool IsEmptyDir(const fs::path& p, std::error_code& ec) {
  return fs::is_directory(p, ec) && fs::is_empty(p, ec);
}

// True when `inner` is `outer` or lies under it (both absolute and normalized).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateBackupDir(absl::string_view dir, absl::string_view data_dir,
                               absl::string_view root) {
  if (dir.empty()) return absl::InvalidArgumentError("backup dir is empty");
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (dir.size() > kMaxBackupPathBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("backup dir is %d bytes long; at most %d",
                                                      dir.size(), kMaxBackupPathBytes));
  }
  for (char c : dir) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("backup dir contains a control character");
    }
  }
  if (dir.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "backup dir must be an absolute path on the coordinator's machine, not ", dir));
  }
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("backup dir must not contain '.' or '..' components: ", dir));
    }
  }
  const fs::path target = fs::path(std::string(dir)).lexically_normal();
  std::error_code ec;
  const fs::path data = fs::absolute(fs::path(std::string(data_dir)), ec).lexically_normal();
  if (ec) return absl::InternalError(absl::StrCat("cannot resolve the data dir: ", ec.message()));
  if (IsWithin(target, data) || IsWithin(data, target)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backup dir ", dir, " overlaps the data dir ", data.string()));
  }
  fs::path parent = target.parent_path();
  if (!fs::is_directory(parent, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the parent of backup dir ", dir, " is not an existing directory on the coordinator"));
  }
  // The same checks once links are resolved, so that a link in the path cannot put the backup
  // inside the data dir, nor outside the root.
  const fs::path real_parent = fs::canonical(parent, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot resolve the parent of backup dir ", dir, ": ", ec.message()));
  }
  const fs::path real_target = real_parent / target.filename();
  const fs::path real_data = fs::weakly_canonical(data, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot resolve the data dir: ", ec.message()));
  if (IsWithin(real_target, real_data) || IsWithin(real_data, real_target)) {
    return absl::InvalidArgumentError(absl::StrCat("backup dir ", dir, " overlaps the data dir ",
                                                   data.string(), " once links are resolved"));
  }
  if (!root.empty()) {
    const fs::path real_root = fs::weakly_canonical(fs::path(std::string(root)), ec);
    if (ec || !IsWithin(real_target, real_root) || real_target == real_root) {
      return absl::InvalidArgumentError(absl::StrCat("backup dir ", dir,
                                                     " is outside the backup root ", root,
                                                     " (--backup_root): write backups under it"));
    }
  }
  if (fs::exists(fs::symlink_status(target, ec))) {
    if (fs::is_symlink(fs::symlink_status(target, ec)) || !IsEmptyDir(target, ec)) {
      return absl::FailedPreconditionError(
          absl::StrCat("backup dir ", dir, " already exists and is not an empty directory"));
    }
  }
  return absl::OkStatus();
}

absl::Status Backup(Store& store, absl::string_view data_dir, const std::string& requested,
                    absl::string_view root) {
  if (absl::Status s = ValidateBackupDir(requested, data_dir, root); !s.ok()) return s;
  std::string dir = requested;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  // RocksDB wants to create the directory itself.
  if (fs::is_directory(dir, ec)) {
    fs::remove(dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot replace the empty directory ", dir, ": ", ec.message()));
    }
  }
  return store.Checkpoint(dir);
}

absl::Status RestoreBackup(const std::string& backup_dir, const std::string& data_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(backup_dir) / "CURRENT", ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot restore from ", backup_dir, ": it is not a backup (no CURRENT file)"));
  }
  const fs::path data(data_dir);
  if (fs::exists(data, ec) && !IsEmptyDir(data, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot restore into ", data_dir,
                     ": it is not empty (restore only into a new or empty data dir)"));
  }
  fs::path staging = data;
  staging += ".restoring";
  fs::remove_all(staging, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot clear ", staging.string(), ": ", ec.message()));
  }
  fs::copy(backup_dir, staging, fs::copy_options::recursive, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot copy ", backup_dir, " to ", staging.string(), ": ", ec.message()));
  }
  if (fs::exists(data, ec)) fs::remove(data, ec);  // empty: checked above
  fs::rename(staging, data, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot move ", staging.string(), " to ", data_dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace storage
