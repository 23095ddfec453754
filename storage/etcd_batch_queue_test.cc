// The leader/follower batching of etcd's commits and reads, with a Send of the test's own: what
// arrives while a batch is in flight goes out together, in arrival order, each caller gets its
// own answer, and a failed batch fails only its own callers. The batches on a real cluster are
// EtcdStoreTest's.
#include "storage/etcd_batch_queue.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// Answers each item with its double; the first batch waits for `release`. Records every batch.
struct Doubler {
  absl::Notification first_sent;
  absl::Notification release;
  absl::Mutex mu;
  std::vector<std::vector<int>> batches;
  bool fail_second = false;

  EtcdBatchQueue<int, int> MakeQueue(size_t max_batch) {
    return EtcdBatchQueue<int, int>(
        [max_batch](const std::vector<const int*>& pending) {
          std::vector<size_t> chosen;
          for (size_t i = 0; i < pending.size() && i < max_batch; ++i) chosen.push_back(i);
          return chosen;
        },
        [this](const std::vector<int*>& batch, std::vector<absl::StatusOr<int>>& results) {
          size_t n = 0;
          {
            absl::MutexLock lock(&mu);
            batches.emplace_back();
            for (int* item : batch) batches.back().push_back(*item);
            n = batches.size();
          }
          if (n == 1) {
            first_sent.Notify();
            release.WaitForNotification();
          }
          for (size_t i = 0; i < batch.size(); ++i) {
            if (n == 2 && fail_second) {
              results[i] = absl::UnavailableError("outcome unknown");
            } else {
              results[i] = *batch[i] * 2;
            }
          }
        });
  }
};

// Submits items[0] and, once its batch is out and held, the others one at a time (so that their
// order in the queue is known); then lets the first batch go and returns every answer, in the
// order of `items` (an item that never queued stops the submitting, and fails the test).
std::vector<absl::StatusOr<int>> SubmitBehindTheFirst(Doubler& doubler,
                                                      EtcdBatchQueue<int, int>& queue,
                                                      const std::vector<int>& items) {
  std::vector<absl::StatusOr<int>> answers(items.size(), absl::UnknownError("none"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { answers[0] = queue.Submit(items[0]); });
  doubler.first_sent.WaitForNotification();
  bool queued = true;
  for (size_t i = 1; i < items.size() && queued; ++i) {
    threads.emplace_back([&, i] { answers[i] = queue.Submit(items[i]); });
    queued = testing_util::WaitFor([&] { return queue.waiting() == i; });
  }
  doubler.release.Notify();
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(queued) << "an item did not queue behind the first batch";
  return answers;
}

TEST(EtcdBatchQueue, WhatArrivesWhileABatchIsInFlightGoesOutTogetherInArrivalOrder) {
  Doubler doubler;
  EtcdBatchQueue<int, int> queue = doubler.MakeQueue(/*max_batch=*/100);
  // Eight more behind the first, while the first batch is out.
  const std::vector<absl::StatusOr<int>> answers =
      SubmitBehindTheFirst(doubler, queue, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_THAT(doubler.batches, ElementsAre(ElementsAre(0), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8)));
  for (int i = 0; i <= 8; ++i) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].status();
    EXPECT_EQ(*answers[i], 2 * i);
  }
  EXPECT_EQ(queue.batches(), 2u);
  EXPECT_EQ(queue.items(), 9u);
  EXPECT_EQ(queue.waiting(), 0u);
}

TEST(EtcdBatchQueue, ABatchTakesWhatItsChoiceAllowsAndTheRestGoesNext) {
  Doubler doubler;
  EtcdBatchQueue<int, int> queue = doubler.MakeQueue(/*max_batch=*/3);
  for (const absl::StatusOr<int>& answer :
       SubmitBehindTheFirst(doubler, queue, {0, 1, 2, 3, 4, 5, 6, 7})) {
    ASSERT_TRUE(answer.ok()) << answer.status();
  }
  EXPECT_THAT(doubler.batches, ElementsAreArray({std::vector<int>{0}, std::vector<int>{1, 2, 3},
                                                 std::vector<int>{4, 5, 6}, std::vector<int>{7}}));
}

TEST(EtcdBatchQueue, AFailedBatchFailsOnlyItsOwnCallers) {
  Doubler doubler;
  doubler.fail_second = true;
  EtcdBatchQueue<int, int> queue = doubler.MakeQueue(/*max_batch=*/2);
  const std::vector<absl::StatusOr<int>> answers =
      SubmitBehindTheFirst(doubler, queue, {10, 11, 12, 13});
  ASSERT_THAT(doubler.batches, ElementsAre(ElementsAre(10), ElementsAre(11, 12), ElementsAre(13)));
  EXPECT_EQ(answers[0].value_or(-1), 20);
  EXPECT_TRUE(absl::IsUnavailable(answers[1].status())) << answers[1].status();
  EXPECT_TRUE(absl::IsUnavailable(answers[2].status())) << answers[2].status();
  EXPECT_EQ(answers[3].value_or(-1), 26);
}

}  // namespace
}  // namespace storage
