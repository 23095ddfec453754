#include "common/thread_pool.h"

#include <pthread.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

TEST(ThreadPoolTest, RunsEveryClosureBeforeTheDestructorReturns) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(4);
    for (int i = 0; i < 1000; ++i) pool.Schedule([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 1000);
}

TEST(ThreadPoolTest, ClosuresQueuedByClosuresDuringShutdownStillRun) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 10; ++i) {
      pool.Schedule([&] {
        ++ran;
        pool.Schedule([&] { ++ran; });
      });
    }
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(ThreadPoolTest, RunsClosuresInParallelOnDistinctThreads) {
  constexpr int kThreads = 4;
  // Every closure waits at the barrier, so the test only finishes if all run at once.
  absl::Barrier* barrier = new absl::Barrier(kThreads);
  absl::Mutex mu;
  std::set<std::thread::id> ids;
  {
    ThreadPool pool(kThreads);
    for (int i = 0; i < kThreads; ++i) {
      pool.Schedule([&] {
        {
          absl::MutexLock lock(&mu);
          ids.insert(std::this_thread::get_id());
        }
        if (barrier->Block()) delete barrier;
      });
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads));
}

TEST(ThreadPoolTest, ZeroThreadsStillRunsWork) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(0);
    pool.Schedule([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 1);
}

TEST(ThreadPoolTest, TryScheduleRefusesOnceTheQueueIsFullAndAcceptsAgainWhenItDrains) {
  absl::Notification release;
  absl::Notification busy;
  std::atomic<int> ran{0};
  {
    ThreadPool pool(1, /*max_queued=*/2);
    // The one worker is held, so what follows stays queued.
    ASSERT_TRUE(pool.TrySchedule([&] {
                      busy.Notify();
                      release.WaitForNotification();
                    })
                    .ok());
    busy.WaitForNotification();
    EXPECT_TRUE(pool.TrySchedule([&] { ++ran; }).ok());
    EXPECT_TRUE(pool.TrySchedule([&] { ++ran; }).ok());
    EXPECT_EQ(pool.queued(), 2);
    absl::Status refused = pool.TrySchedule([&] { ran += 100; });
    EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(refused.message(), testing::HasSubstr("--max_queued_calls"));
    // Continuations are never refused.
    pool.Schedule([&] { ++ran; });
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 3);
}

TEST(ThreadPoolTest, UnboundedTryScheduleNeverRefuses) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 10000; ++i) ASSERT_TRUE(pool.TrySchedule([&] { ++ran; }).ok());
  }
  EXPECT_EQ(ran.load(), 10000);
}

TEST(ThreadPoolTest, WorkersCarryThePoolsNameCutToWhatLinuxKeeps) {
  auto name_of_worker = [](ThreadPool& pool) {
    char name[32] = {};
    absl::Notification read;
    pool.Schedule([&] {
      pthread_getname_np(pthread_self(), name, sizeof(name));
      read.Notify();
    });
    read.WaitForNotification();
    return std::string(name);
  };
  ThreadPool named(1, ThreadPool::kUnbounded, "rpc-work");
  EXPECT_EQ(name_of_worker(named), "rpc-work");
  ThreadPool long_name(1, ThreadPool::kUnbounded, "a-name-longer-than-fifteen-bytes");
  EXPECT_EQ(name_of_worker(long_name), "a-name-longer-t");
  ThreadPool unnamed(1);
  EXPECT_EQ(name_of_worker(unnamed), "pool");
}

}  // namespace
}  // namespace common
