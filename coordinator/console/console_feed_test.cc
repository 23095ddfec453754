#include "coordinator/console/console_feed.h"

#include <thread>

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
  for (int i = 0; i < 5; ++i) feed.Publish("context", "c");
  ConsoleFeed::Batch batch = feed.Wait(0, absl::ZeroDuration());
  EXPECT_TRUE(batch.resync);
  ASSERT_EQ(batch.changes.size(), 2u);
  EXPECT_EQ(batch.changes[0].seq, 4);
  EXPECT_FALSE(feed.Wait(3, absl::ZeroDuration()).resync);
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
