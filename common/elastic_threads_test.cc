#include "common/elastic_threads.h"

#include <pthread.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

// Polls `done` until it holds or 30 s pass.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

TEST(ElasticThreadsTest, AnIdleThreadTakesTheNextClosure) {
  ElasticThreads threads("elastic-test");
  for (int i = 0; i < 20; ++i) {
    absl::Notification ran;
    threads.Run([&] { ran.Notify(); });
    ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(Eventually([&] { return threads.idle() == 1; }));
    EXPECT_EQ(threads.threads(), 1) << "closure " << i << " got a thread of its own";
  }
}

TEST(ElasticThreadsTest, AClosureThatBlocksHoldsUpNoOther) {
  ElasticThreads threads("elastic-test");
  absl::Notification release;
  absl::Notification blocked;
  threads.Run([&] {
    blocked.Notify();
    release.WaitForNotification();
  });
  ASSERT_TRUE(blocked.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Notification second;
  threads.Run([&] { second.Notify(); });
  EXPECT_TRUE(second.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(threads.threads(), 2);
  release.Notify();
  EXPECT_TRUE(Eventually([&] { return threads.idle() == 2; }));
}

TEST(ElasticThreadsTest, ThreadsIdleLongerThanTheLimitEnd) {
  ElasticThreads threads("elastic-test", absl::Milliseconds(20));
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) threads.Run([&] { ++ran; });
  EXPECT_TRUE(Eventually([&] { return ran.load() == 4 && threads.threads() == 0; }));
}

TEST(ElasticThreadsTest, ThreadsCarryThePoolsName) {
  ElasticThreads threads("exec-echo");
  char name[32] = {};
  absl::Notification read;
  threads.Run([&] {
    pthread_getname_np(pthread_self(), name, sizeof(name));
    read.Notify();
  });
  ASSERT_TRUE(read.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(std::string(name), "exec-echo");
}

// The pool may go while a closure runs past the grace and while threads idle: the closure
// finishes, and every thread ends, none touching the pool.
TEST(ElasticThreadsTest, APoolDestroyedWhileItsThreadsWorkLetsThemFinish) {
  absl::Notification release;
  absl::Notification started;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto threads =
      std::make_unique<ElasticThreads>("elastic-test", absl::Seconds(30), absl::Milliseconds(50));
  threads->Run([] {});
  threads->Run([&release, &started, finished] {
    started.Notify();
    release.WaitForNotification();
    *finished = true;
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  threads.reset();
  release.Notify();
  EXPECT_TRUE(Eventually([&] { return finished->load(); }));
}

// Counts the threads whose thread-local state has been destroyed: they have ended, not merely
// left their work.
std::atomic<int> threads_ended{0};
struct ExitProbe {
  bool armed = false;
  ~ExitProbe() {
    if (armed) ++threads_ended;
  }
};
thread_local ExitProbe exit_probe;

// What a thread holds (a library's per-thread state) is gone once the pool is: a leak checker at
// the process's exit finds none of it.
TEST(ElasticThreadsTest, DestroyingThePoolEndsAndJoinsItsThreads) {
  threads_ended = 0;
  {
    ElasticThreads threads("elastic-test");
    absl::Notification first_started;
    absl::Notification second_ran;
    threads.Run([&] {
      exit_probe.armed = true;
      first_started.Notify();
      second_ran.WaitForNotification();  // so the second closure gets a thread of its own
    });
    ASSERT_TRUE(first_started.WaitForNotificationWithTimeout(absl::Seconds(30)));
    threads.Run([&] {
      exit_probe.armed = true;
      second_ran.Notify();
    });
    ASSERT_TRUE(Eventually([&] { return threads.idle() == 2; }));
    EXPECT_EQ(threads_ended.load(), 0);
  }
  EXPECT_EQ(threads_ended.load(), 2);
}

// A thread that ended idle is joined by the next Run, not left behind.
TEST(ElasticThreadsTest, AThreadThatEndedIdleIsJoined) {
  threads_ended = 0;
  ElasticThreads threads("elastic-test", absl::Milliseconds(20));
  threads.Run([] { exit_probe.armed = true; });
  ASSERT_TRUE(Eventually([&] { return threads.threads() == 0; }));
  absl::Notification ran;
  threads.Run([&] { ran.Notify(); });
  EXPECT_EQ(threads_ended.load(), 1);
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace common
