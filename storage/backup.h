// Online backups are RocksDB checkpoints (Store::Checkpoint): a directory that opens as a
// database of its own. This file holds the rules for where a backup may be written, which the
// admin service applies to a client's path, and the restore that copies a backup into an empty
// data directory before the coordinator opens it. Backups live on the coordinator's own file
// system; nothing here sends data over the network.
#ifndef STORAGE_BACKUP_H_
#define STORAGE_BACKUP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "storage/store.h"

namespace storage {

// Longest backup path accepted (bytes).
inline constexpr size_t kMaxBackupPathBytes = 4096;

// Checks that `dir` may receive a backup of the database at `data_dir`: an absolute path without
// `.` or `..` components or control characters, at most kMaxBackupPathBytes, whose parent is an
// existing directory, which is either absent or an empty directory, and which is neither inside
// the data dir nor contains it; and, when `root` is not empty, which lies inside `root` once
// symbolic links are resolved. INVALID_ARGUMENT for a malformed path or one outside `root`,
// FAILED_PRECONDITION for one the file system refuses (parent missing, directory not empty).
[[nodiscard]] absl::Status ValidateBackupDir(absl::string_view dir, absl::string_view data_dir,
                                             absl::string_view root = "");

// Validates `dir` as above and writes a checkpoint of `store` (whose data dir is `data_dir`)
// into it. An empty directory at `dir` is replaced by the backup. Trailing slashes are ignored.
[[nodiscard]] absl::Status Backup(Store& store, absl::string_view data_dir,
                                  const std::string& requested, absl::string_view root = "");

// Copies the backup at `backup_dir` into `data_dir`, which must be absent or an empty
// directory: the files are copied into `<data_dir>.restoring` and that directory is renamed to
// `data_dir` when every file is in, so a restore cut short leaves no half database behind.
// FAILED_PRECONDITION when `backup_dir` does not look like a database (no CURRENT file) or
// `data_dir` holds anything.
[[nodiscard]] absl::Status RestoreBackup(const std::string& backup_dir,
                                         const std::string& data_dir);

}  // namespace storage

#endif  // STORAGE_BACKUP_H_
