#include "coordinator/console/console_feed.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

TEST(ConsoleFeedTest, ReturnsTheChangesAfterTheCursor) {
  ConsoleFeed feed;
  feed.Publish("context", "a");
  feed.Publish("run", "r");
  ConsoleFeed::Batch batch = feed.Wait(1, absl::ZeroDuration());
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_EQ(batch.changes[0].seq, 2);
  EXPECT_EQ(batch.changes[0].kind, "run");
  EXPECT_EQ(batch.changes[0].id, "r");
  EXPECT_FALSE(batch.resync);
  EXPECT_EQ(feed.last_seq(), 2);
}

TEST(ConsoleFeedTest, NothingNewIsAnEmptyBatch) {
  ConsoleFeed feed;
  feed.Publish("context", "a");
  ConsoleFeed::Batch batch = feed.Wait(1, absl::ZeroDuration());
  EXPECT_TRUE(batch.changes.empty());
  EXPECT_FALSE(batch.resync);
  EXPECT_FALSE(batch.closed);
}

TEST(ConsoleFeedTest, AReaderBehindTheRingIsToldToResync) {
  ConsoleFeed feed(/*capacity=*/2);
  for (int i = 0; i < 5; ++i) feed.Publish("context", absl::StrCat("c", i));
  ConsoleFeed::Batch batch = feed.Wait(0, absl::ZeroDuration());
  EXPECT_TRUE(batch.resync);
  ASSERT_EQ(batch.changes.size(), 2u);
  EXPECT_EQ(batch.changes[0].seq, 4);
  EXPECT_FALSE(feed.Wait(3, absl::ZeroDuration()).resync);
}

// The items of a new run are created together and each announces its run: the ring keeps one
// entry for the burst, the newest, so a big run does not push every other change out.
TEST(ConsoleFeedTest, ConsecutiveChangesOfOneRecordTakeOnePlace) {
  ConsoleFeed feed(/*capacity=*/2);
  feed.Publish("context", "a");
  for (int i = 0; i < 100; ++i) feed.Publish("run", "r");
  EXPECT_EQ(feed.last_seq(), 101);
  ConsoleFeed::Batch batch = feed.Wait(0, absl::ZeroDuration());
  EXPECT_FALSE(batch.resync);
  ASSERT_EQ(batch.changes.size(), 2u);
  EXPECT_EQ(batch.changes[0].id, "a");
  EXPECT_EQ(batch.changes[1].id, "r");
  EXPECT_EQ(batch.changes[1].seq, 101);
  // A reader that had seen part of the burst still gets its newest change.
  batch = feed.Wait(50, absl::ZeroDuration());
  EXPECT_FALSE(batch.resync);
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_EQ(batch.changes[0].seq, 101);
  // Another record in between keeps both.
  feed.Publish("context", "a");
  feed.Publish("run", "r");
  batch = feed.Wait(101, absl::ZeroDuration());
  ASSERT_EQ(batch.changes.size(), 2u);
  // The first burst's entry left the ring: a reader from before it must read everything again.
  EXPECT_TRUE(feed.Wait(0, absl::ZeroDuration()).resync);
}

TEST(ConsoleFeedTest, APublishWakesAWaitingReader) {
  ConsoleFeed feed;
  ConsoleFeed::Batch batch;
  std::thread reader([&] { batch = feed.Wait(0, absl::InfiniteDuration()); });
  feed.Publish("task", "t");
  reader.join();
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_EQ(batch.changes[0].id, "t");
}

// A stream whose token is revoked sets its stop flag and wakes the feed: its reader returns at
// once with nothing, while another reader keeps waiting.
TEST(ConsoleFeedTest, AStopFlagAndWakeEndOneReadersWait) {
  ConsoleFeed feed;
  std::atomic<bool> stop{false};
  std::atomic<bool> other_stop{false};
  ConsoleFeed::Batch batch;
  ConsoleFeed::Batch other;
  std::thread reader([&] { batch = feed.Wait(0, absl::InfiniteDuration(), &stop); });
  std::thread other_reader([&] { other = feed.Wait(0, absl::InfiniteDuration(), &other_stop); });
  stop.store(true);
  feed.Wake();
  reader.join();
  EXPECT_TRUE(batch.changes.empty());
  EXPECT_FALSE(batch.closed);
  feed.Publish("task", "t");  // the other reader was still waiting: this is what it gets
  other_reader.join();
  ASSERT_EQ(other.changes.size(), 1u);
  EXPECT_EQ(other.changes[0].id, "t");
}

TEST(ConsoleFeedTest, CloseWakesReadersAndEndsPublishing) {
  ConsoleFeed feed;
  ConsoleFeed::Batch batch;
  std::thread reader([&] { batch = feed.Wait(0, absl::InfiniteDuration()); });
  feed.Close();
  reader.join();
  EXPECT_TRUE(batch.closed);
  feed.Publish("context", "late");
  EXPECT_EQ(feed.last_seq(), 0);
  EXPECT_TRUE(feed.Wait(0, absl::InfiniteDuration()).closed);
}

}  // namespace
}  // namespace coordinator
