// Helpers shared by every test: status assertions that print the status on failure, a bounded
// wait for a condition, and a temporary directory removed at the end of the test.
#ifndef TESTS_TEST_UTIL_H_
#define TESTS_TEST_UTIL_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace testing_util {

// The macros below copy the status: `expr` is often a temporary, and a reference into it would
// dangle once the declaration that holds it ends.
inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

// How long a test waits for something that should happen soon: long enough for a loaded
// machine, and only spent when the test fails.
inline constexpr absl::Duration kWait = absl::Seconds(30);
// How long a test waits on a process it started (a start-up, an evaluation): sanitizer builds on
// a loaded machine are slow to start.
inline constexpr absl::Duration kProcessWait = absl::Seconds(60);

// Asks `pred` every 20 ms until it holds or `timeout` passes; its last answer. How tests wait
// for something another thread or process does, never a sleep of a guessed length.
template <typename Pred>
bool WaitFor(Pred pred, absl::Duration timeout = kWait) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

// A fresh directory under the test temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "coordtest-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A clock that only moves when the test says so (for stores that take a clock function).
class FakeClock {
 public:
  absl::Time Now() {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

}  // namespace testing_util

#define ASSERT_OK(expr)                                                     \
  do {                                                                      \
    const absl::Status assert_ok_status_ = ::testing_util::GetStatus(expr); \
    ASSERT_TRUE(assert_ok_status_.ok()) << assert_ok_status_;               \
  } while (false)

#define EXPECT_OK(expr)                                                     \
  do {                                                                      \
    const absl::Status expect_ok_status_ = ::testing_util::GetStatus(expr); \
    EXPECT_TRUE(expect_ok_status_.ok()) << expect_ok_status_;               \
  } while (false)

#endif  // TESTS_TEST_UTIL_H_
