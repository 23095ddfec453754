// The running totals' machinery (tallies.h) on its own, with sources made up here: striping,
// merging, reading groups, building from sources once. What each domain counts is tested
// through the real stores in coordinator/store/tallies_test.cc.
#include "coordinator/store/records/tallies.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::TempDir;

class TalliesMachineryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.path(), /*sync_writes=*/false);
    ASSERT_OK(store);
    store_ = *std::move(store);
  }

  absl::Status Apply(std::vector<TallyDelta> deltas, const std::string& record_id) {
    return store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
      return Tallies::TxnApply(txn, deltas, record_id);
    });
  }

  TallyTotal Read(Tally tally, const std::string& group = "") {
    absl::StatusOr<TallyTotal> total = Tallies::Read(*store_, tally, group);
    EXPECT_OK(total);
    return total.ok() ? *total : TallyTotal{-1, -1};
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
};

TEST_F(TalliesMachineryTest, DeltasOfOneTotalAddUpAcrossRecordsAndStripes) {
  // Records with different ids land in different stripes; a reader adds every stripe up.
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK(Apply({TallyDelta{Tally::kScoreByTask, "t", 1, 0.5}}, "record-" + std::to_string(i)));
  }
  EXPECT_EQ(Read(Tally::kScoreByTask, "t").count, 40);
  EXPECT_DOUBLE_EQ(Read(Tally::kScoreByTask, "t").sum, 20.0);
  EXPECT_EQ(Read(Tally::kScoreByTask, "other").count, 0);
  // Deltas of one total in one change are merged; those that cancel out write nothing.
  ASSERT_OK(Apply(
      {TallyDelta{Tally::kContextsActive, "", -1, 0}, TallyDelta{Tally::kContextsActive, "", +1, 0},
       TallyDelta{Tally::kContextsEnded, "", +1, 0}},
      "record-0"));
  EXPECT_EQ(Read(Tally::kContextsActive).count, 0);
  EXPECT_EQ(Read(Tally::kContextsEnded).count, 1);
}

TEST_F(TalliesMachineryTest, GroupsBackAtZeroAreNotListed) {
  ASSERT_OK(Apply({TallyDelta{Tally::kScoreByAgent, "a", 1, 1.0}}, "x"));
  ASSERT_OK(Apply({TallyDelta{Tally::kScoreByAgent, "b", 2, 1.5}}, "y"));
  ASSERT_OK(Apply({TallyDelta{Tally::kScoreByAgent, "a", -1, -1.0}}, "x"));
  absl::StatusOr<std::map<std::string, TallyTotal>> groups =
      Tallies::ReadGroups(*store_, Tally::kScoreByAgent);
  ASSERT_OK(groups);
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ(groups->at("b").count, 2);
  EXPECT_DOUBLE_EQ(groups->at("b").sum, 1.5);
  // TxnAdd is a count-only delta.
  ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) {
    return Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, "agent", "task", 3);
  }));
  EXPECT_EQ(Read(Tally::kDeliveriesQueued, "agent").count, 3);
}

TEST_F(TalliesMachineryTest, EnsureBuiltCountsEverySourceOnceAndReplacesWhatWasThere) {
  ASSERT_OK(Apply({TallyDelta{Tally::kRunsActive, "", 7, 0}}, "stale"));
  int calls = 0;
  const std::vector<TallySource> sources = {[&](storage::Store&, const TallySink& add) {
                                              ++calls;
                                              add(TallyDelta{Tally::kContextsActive, "", 2, 0});
                                              add(TallyDelta{Tally::kScoreByTask, "t", 1, 0.25});
                                              return absl::OkStatus();
                                            },
                                            [&](storage::Store&, const TallySink& add) {
                                              ++calls;
                                              add(TallyDelta{Tally::kContextsActive, "", 1, 0});
                                              return absl::OkStatus();
                                            }};
  absl::StatusOr<bool> built = Tallies::Built(*store_);
  ASSERT_OK(built);
  EXPECT_FALSE(*built);
  absl::StatusOr<bool> ensured = Tallies::EnsureBuilt(*store_, sources);
  ASSERT_OK(ensured);
  EXPECT_TRUE(*ensured);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(Read(Tally::kContextsActive).count, 3);
  EXPECT_DOUBLE_EQ(Read(Tally::kScoreByTask, "t").sum, 0.25);
  EXPECT_EQ(Read(Tally::kRunsActive).count, 0);  // what no source counts is gone
  // Built now: a second call reads the marker and counts nothing.
  ensured = Tallies::EnsureBuilt(*store_, sources);
  ASSERT_OK(ensured);
  EXPECT_FALSE(*ensured);
  EXPECT_EQ(calls, 2);
}

TEST_F(TalliesMachineryTest, ASourceThatFailsLeavesTheTotalsAsTheyWere) {
  ASSERT_OK(Apply({TallyDelta{Tally::kRunsEnded, "", 4, 0}}, "r"));
  const std::vector<TallySource> sources = {[](storage::Store&, const TallySink& add) {
    add(TallyDelta{Tally::kRunsEnded, "", 1, 0});
    return absl::DataLossError("a record that does not decode");
  }};
  absl::Status rebuilt = Tallies::Rebuild(*store_, sources);
  EXPECT_EQ(rebuilt.code(), absl::StatusCode::kDataLoss) << rebuilt;
  EXPECT_EQ(Read(Tally::kRunsEnded).count, 4);
  absl::StatusOr<bool> built = Tallies::Built(*store_);
  ASSERT_OK(built);
  EXPECT_FALSE(*built);
}

}  // namespace
}  // namespace coordinator
