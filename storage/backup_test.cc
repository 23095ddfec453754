#include "storage/backup.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/rocks_test_util.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing_util::TempDir;

using ::storage::testing::OpenAt;

using ::storage::testing::Put;

TEST(BackupDirTest, RefusesMalformedPaths) {
  TempDir dir;
  const std::string data = dir.Sub("data");
  for (const std::string& bad :
       {std::string(), std::string("relative/backup"), std::string("./b"), dir.Sub("x/../y"),
        dir.Sub("./y"), dir.Sub("a\nb"), std::string("/") + std::string(5000, 'a')}) {
    EXPECT_EQ(ValidateBackupDir(bad, data).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(BackupDirTest, RefusesTheDataDirAndWhatIsInsideIt) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("data"));
  EXPECT_EQ(ValidateBackupDir(dir.Sub("data/backup"), dir.Sub("data")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBackupDir(dir.Sub("data"), dir.Sub("data")).code(),
            absl::StatusCode::kInvalidArgument);
  // A backup dir that would contain the data dir.
  EXPECT_EQ(ValidateBackupDir(dir.path(), dir.Sub("data")).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BackupDirTest, ALinkCannotPutTheBackupInsideTheDataDir) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("data"));
  std::filesystem::create_directory_symlink(dir.Sub("data"), dir.Sub("to-data"));
  absl::Status s = ValidateBackupDir(dir.Sub("to-data/backup"), dir.Sub("data"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("links are resolved"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("data/backup")));
}

TEST(BackupDirTest, WithARootOnlyDirsUnderItAreAccepted) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("root/nightly"));
  std::filesystem::create_directories(dir.Sub("elsewhere"));
  const std::string root = dir.Sub("root");
  EXPECT_OK(ValidateBackupDir(dir.Sub("root/b1"), "/nonexistent-data", root));
  EXPECT_OK(ValidateBackupDir(dir.Sub("root/nightly/b2"), "/nonexistent-data", root));
  EXPECT_OK(ValidateBackupDir(dir.Sub("root/b1"), "/nonexistent-data", root + "/"));
  EXPECT_EQ(ValidateBackupDir(dir.Sub("elsewhere/b"), "/nonexistent-data", root).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBackupDir(root, "/nonexistent-data", root).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateBackupDir(dir.Sub("rootless"), "/nonexistent-data", root).code(),
            absl::StatusCode::kInvalidArgument);
  // A link inside the root that points out of it does not take the backup out.
  std::filesystem::create_directory_symlink(dir.Sub("elsewhere"), dir.Sub("root/out"));
  absl::Status through_link = ValidateBackupDir(dir.Sub("root/out/b"), "/nonexistent-data", root);
  EXPECT_EQ(through_link.code(), absl::StatusCode::kInvalidArgument) << through_link;
  EXPECT_THAT(std::string(through_link.message()), ::testing::HasSubstr("--backup_root"));
}

TEST(BackupDirTest, RefusesNonEmptyDirsFilesAndMissingParents) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("full"));
  std::ofstream(dir.Sub("full/file")) << "x";
  std::ofstream(dir.Sub("plain")) << "x";
  EXPECT_EQ(ValidateBackupDir(dir.Sub("full"), "/nonexistent-data").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ValidateBackupDir(dir.Sub("plain"), "/nonexistent-data").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ValidateBackupDir(dir.Sub("missing/backup"), "/nonexistent-data").code(),
            absl::StatusCode::kFailedPrecondition);
  std::filesystem::create_directories(dir.Sub("empty"));
  EXPECT_OK(ValidateBackupDir(dir.Sub("empty"), "/nonexistent-data"));
  EXPECT_OK(ValidateBackupDir(dir.Sub("new"), "/nonexistent-data"));
  EXPECT_OK(ValidateBackupDir(dir.Sub("new/"), "/nonexistent-data"));
  // The root contains every data dir.
  EXPECT_EQ(ValidateBackupDir("/", "/nonexistent-data").code(), absl::StatusCode::kInvalidArgument);
}

TEST(BackupTest, BackupIntoEmptyDirThenRestoreIntoNewDataDir) {
  TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("data"));
    ASSERT_OK(store);
    ASSERT_OK(Put(**store, ColumnFamily::kContexts, "k", "v"));
    std::filesystem::create_directories(dir.Sub("backup"));
    ASSERT_OK(Backup(**store, dir.Sub("data"), dir.Sub("backup") + "/"));
    ASSERT_OK(Put(**store, ColumnFamily::kContexts, "after", "x"));
    // A second backup into the same, now full, directory is refused and changes nothing.
    EXPECT_EQ(Backup(**store, dir.Sub("data"), dir.Sub("backup")).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  ASSERT_OK(RestoreBackup(dir.Sub("backup"), dir.Sub("restored")));
  // A backup into a directory that does not exist yet.
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("data"));
    ASSERT_OK(store);
    ASSERT_OK(Backup(**store, dir.Sub("data"), dir.Sub("fresh")));
    EXPECT_TRUE(std::filesystem::exists(dir.Sub("fresh/CURRENT")));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("restored.restoring")));
  absl::StatusOr<std::unique_ptr<RocksStore>> restored = OpenAt(dir.Sub("restored"));
  ASSERT_OK(restored);
  EXPECT_EQ(*(*restored)->Get(ColumnFamily::kContexts, "k"), "v");
  EXPECT_EQ((*restored)->Get(ColumnFamily::kContexts, "after").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(BackupTest, RestoreRefusesANonEmptyDataDirAndANonBackup) {
  TempDir dir;
  { ASSERT_OK(OpenAt(dir.Sub("data"))); }
  std::filesystem::create_directories(dir.Sub("notabackup"));
  EXPECT_EQ(RestoreBackup(dir.Sub("notabackup"), dir.Sub("new")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("new")));
  // The data dir of a database is no place to restore into; it is left as it was.
  std::filesystem::create_directories(dir.Sub("other"));
  std::ofstream(dir.Sub("other/keep")) << "x";
  EXPECT_EQ(RestoreBackup(dir.Sub("data"), dir.Sub("other")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("other/keep")));
}

TEST(SnapshotTest, SeesOneMomentAndRefusesWrites) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("data"));
  ASSERT_OK(store);
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "a", "1"));
  ASSERT_OK(Put(**store, ColumnFamily::kWork, "w", "1"));
  absl::StatusOr<std::unique_ptr<Store>> snapshot = (*store)->NewSnapshot();
  ASSERT_OK(snapshot);
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "a", "2"));
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "b", "2"));
  ASSERT_OK(Put(**store, ColumnFamily::kWork, "w", "2"));
  EXPECT_EQ(*(*snapshot)->Get(ColumnFamily::kContexts, "a"), "1");
  EXPECT_EQ(*(*snapshot)->Get(ColumnFamily::kWork, "w"), "1");
  EXPECT_EQ((*snapshot)->Get(ColumnFamily::kContexts, "b").status().code(),
            absl::StatusCode::kNotFound);
  int count = 0;
  std::unique_ptr<Iterator> it = (*snapshot)->NewIterator(ColumnFamily::kContexts, "", "");
  for (; it->Valid(); it->Next()) ++count;
  EXPECT_OK(it->status());
  EXPECT_EQ(count, 1);
  EXPECT_EQ(Put(**snapshot, ColumnFamily::kContexts, "c", "x").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*store)->Get(ColumnFamily::kContexts, "c").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kContexts, "a"), "2");
}

}  // namespace
}  // namespace storage
