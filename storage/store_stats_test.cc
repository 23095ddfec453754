// RocksStore::Stats: the engine figures the coordinator's /metrics exposes.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/rocks_test_util.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing_util::TempDir;

using ::storage::testing::OpenAt;

// Bytes that do not compress, so the size on disk follows the size written.
std::string Incompressible(size_t n, uint64_t seed) {
  std::string out(n, '\0');
  for (char& c : out) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    c = static_cast<char>(seed >> 56);
  }
  return out;
}

TEST(StoreStatsTest, AFreshStoreIsNotStalled) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
  ASSERT_OK(store);
  const StoreStats stats = (*store)->Stats();
  EXPECT_FALSE(stats.write_stopped);
  EXPECT_EQ(stats.delayed_write_rate, 0u);
  EXPECT_EQ(stats.stall_stops, 0u);
  EXPECT_EQ(stats.stall_slowdowns, 0u);
  EXPECT_EQ(stats.compactions_pending, 0u);
}

TEST(StoreStatsTest, LiveDataSizeFollowsWhatIsStored) {
  TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
    ASSERT_OK(store);
    for (int i = 0; i < 64; ++i) {
      ASSERT_OK((*store)->RunTransaction([&](Transaction& txn) {
        return txn.Put(ColumnFamily::kContexts, "key" + std::to_string(i),
                       Incompressible(32 << 10, static_cast<uint64_t>(i)));
      }));
    }
  }
  // Reopening replays the log into a table file, which the estimate counts (2 MiB written).
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
  ASSERT_OK(store);
  EXPECT_GT((*store)->Stats().live_data_bytes, 1u << 20);
}

}  // namespace
}  // namespace storage
