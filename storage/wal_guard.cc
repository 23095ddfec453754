#include "storage/wal_guard.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "rocksdb/env.h"

namespace storage {
namespace {

// The thread running DB::SyncWAL between BeginSync and EndSync. A failure of that sync's own
// fsync is reported from this thread, which must not wait for itself.
thread_local bool t_in_sync = false;

// The last component of a path.
absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// A file RocksDB writes through a WritableFileWriter, whose error state this wrapper keeps the
// process out of. Every operation that can put the writer in that state goes through Check:
//   - a WAL file (with a guard) reports the failure to the guard first, then returns it;
//   - RocksDB's info log (no guard) drops it: a log line that cannot be written (a full disk) is
//     lost, and the database does not depend on that file.
class CheckedFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  CheckedFile(std::unique_ptr<rocksdb::FSWritableFile> file, std::shared_ptr<WalGuard> guard)
      : FSWritableFileOwnerWrapper(std::move(file)), guard_(std::move(guard)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    return Check(target()->Append(data, options, dbg));
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    return Check(target()->Append(data, options, info, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    return Check(target()->PositionedAppend(data, offset, options, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    return Check(target()->PositionedAppend(data, offset, options, info, dbg));
  }
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
    return Check(target()->Truncate(size, options, dbg));
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return Check(target()->Flush(options, dbg));
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return Check(target()->Sync(options, dbg));
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return Check(target()->Fsync(options, dbg));
  }
  rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override {
    return Check(target()->RangeSync(offset, nbytes, options, dbg));
  }

 private:
  rocksdb::IOStatus Check(rocksdb::IOStatus s) {
    if (s.ok()) return s;
    if (guard_ != nullptr) {
      guard_->WriteFailed(s);
      return s;
    }
    s.PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }

  const std::shared_ptr<WalGuard> guard_;  // null for the info log
};

class WalGuardFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  WalGuardFileSystem(std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<WalGuard> guard)
      : FileSystemWrapper(std::move(base)), guard_(std::move(guard)) {}

  static const char* kClassName() { return "CoordinatorWalGuardFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrap(fname, target()->NewWritableFile(fname, options, result, dbg), result);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname,
                                       const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrap(fname, target()->ReopenWritableFile(fname, options, result, dbg), result);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrap(fname, target()->ReuseWritableFile(fname, old_fname, options, result, dbg), result);
  }

 private:
  rocksdb::IOStatus Wrap(const std::string& fname, rocksdb::IOStatus s,
                         std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (s.ok() && IsWalFileName(fname)) {
      *result = std::make_unique<CheckedFile>(std::move(*result), guard_);
      guard_->LogCreated();
    } else if (s.ok() && IsInfoLogFileName(fname)) {
      *result = std::make_unique<CheckedFile>(std::move(*result), nullptr);
    }
    return s;
  }

  const std::shared_ptr<WalGuard> guard_;
};

// The environment the database runs in: the guarded file system, and an info log opened
// through it (Env::NewLogger would open it through the default file system).
class WalGuardEnv final : public rocksdb::EnvWrapper {
 public:
  explicit WalGuardEnv(std::unique_ptr<rocksdb::Env> composite)
      : EnvWrapper(std::move(composite)) {}

  static const char* kClassName() { return "CoordinatorWalGuardEnv"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::Status NewLogger(const std::string& fname,
                            std::shared_ptr<rocksdb::Logger>* result) override {
    return rocksdb::NewEnvLogger(fname, this, result);
  }
};

}  // namespace

rocksdb::IOStatus WalGuard::BeginSync() {
  absl::MutexLock lock(&mu_);
  if (failed_) return failure_;
  syncing_ = true;
  t_in_sync = true;
  return rocksdb::IOStatus::OK();
}

void WalGuard::EndSync() {
  absl::MutexLock lock(&mu_);
  syncing_ = false;
  t_in_sync = false;
}

uint64_t WalGuard::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

WalGuard::ReopenResult WalGuard::Reopen(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  if (!failed_) return ReopenResult::kReopened;
  if (generation != generation_) return ReopenResult::kFailedAgain;
  if (logs_created_ == logs_at_failure_) return ReopenResult::kNoNewLog;
  failed_ = false;
  failed_flag_.store(false, std::memory_order_release);
  failure_ = rocksdb::IOStatus::OK();
  return ReopenResult::kReopened;
}

rocksdb::IOStatus WalGuard::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

void WalGuard::LogCreated() {
  absl::MutexLock lock(&mu_);
  ++logs_created_;
}

void WalGuard::WriteFailed(const rocksdb::IOStatus& s) {
  absl::MutexLock lock(&mu_);
  if (!failed_) {
    failure_ = s;
    logs_at_failure_ = logs_created_;
  }
  failed_ = true;
  failed_flag_.store(true, std::memory_order_release);
  ++generation_;
  if (t_in_sync) return;  // the sync under way is this thread's own
  mu_.Await(absl::Condition(
      +[](bool* syncing) { return !*syncing; }, &syncing_));
}

bool IsWalFileName(absl::string_view fname) {
  absl::string_view base = BaseName(fname);
  if (!absl::ConsumeSuffix(&base, ".log") || base.empty()) return false;
  for (char c : base) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsInfoLogFileName(absl::string_view fname) { return BaseName(fname) == "LOG"; }

std::unique_ptr<rocksdb::Env> NewWalGuardEnv(std::shared_ptr<rocksdb::FileSystem> base,
                                             std::shared_ptr<WalGuard> guard) {
  return std::make_unique<WalGuardEnv>(rocksdb::NewCompositeEnv(
      std::make_shared<WalGuardFileSystem>(std::move(base), std::move(guard))));
}

}  // namespace storage
