#include "coordinator/rpc/token_source.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;

constexpr char kGreen[] = "green-token-0123456789abcdef";
constexpr char kPurple[] = "purple-token-0123456789abcdef";
constexpr absl::Duration kWait = absl::Seconds(20);

std::string Entry(const std::string& token, const std::string& principal,
                  const std::string& extra = "") {
  return absl::StrCat(R"({"token": ")", token, R"(", "principal": ")", principal,
                      R"(", "role": "agent")", extra, "}");
}

// Replaces the file whole (a new inode, as editors and `mv` do).
void WriteTokens(const std::string& path, const std::string& entries) {
  const std::string temporary = path + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << R"({"tokens": [)" << entries << "]}";
  }
  chmod(temporary.c_str(), 0600);
  std::filesystem::rename(temporary, path);
}

std::vector<absl::string_view> Bearer(const std::string& header) { return {header}; }

absl::StatusOr<Caller> As(const TokenSource& source, const std::string& token) {
  const std::string header = absl::StrCat("Bearer ", token);
  return source.Current()->Authenticate(Bearer(header), absl::Now());
}

// Polls `done` until it holds or kWait passes (no timing is asserted: the bound only keeps a
// broken build from hanging).
template <typename Predicate>
bool Eventually(Predicate done) {
  const absl::Time deadline = absl::Now() + kWait;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

class TokenSourceTest : public ::testing::Test {
 private:
  testing_util::TempDir dir_;

 protected:
  const std::string path_ = dir_.path() + "/tokens.json";
};

TEST_F(TokenSourceTest, AMissingOrBadFileIsAnErrorAtOpen) {
  EXPECT_FALSE(TokenSource::Open(path_).ok());
  WriteTokens(path_, "{]");
  EXPECT_FALSE(TokenSource::Open(path_).ok());
  EXPECT_FALSE(TokenSource::Open("").ok());
}

TEST_F(TokenSourceTest, ReloadPutsTheNewFileInForceAndKeepsTheOldOneWhenTheNewIsBad) {
  WriteTokens(path_, Entry(kGreen, "green"));
  absl::StatusOr<std::unique_ptr<TokenSource>> source = TokenSource::Open(path_);
  ASSERT_OK(source);
  ASSERT_OK(As(**source, kGreen));
  EXPECT_EQ(As(**source, kPurple).status().code(), absl::StatusCode::kUnauthenticated);

  WriteTokens(path_, Entry(kPurple, "purple"));
  ASSERT_OK((*source)->Reload());
  EXPECT_EQ(As(**source, kGreen).status().code(), absl::StatusCode::kUnauthenticated);
  absl::StatusOr<Caller> purple = As(**source, kPurple);
  ASSERT_OK(purple);
  EXPECT_EQ(purple->principal, "purple");

  // Malformed, a duplicate token, no tokens at all: refused, and purple's token still works.
  for (const std::string& bad :
       {std::string("not json"), absl::StrCat(Entry(kGreen, "green"), ",", Entry(kGreen, "other")),
        std::string()}) {
    WriteTokens(path_, bad);
    EXPECT_FALSE((*source)->Reload().ok()) << bad;
    EXPECT_OK(As(**source, kPurple));
  }
  std::filesystem::remove(path_);
  EXPECT_FALSE((*source)->Reload().ok());
  EXPECT_OK(As(**source, kPurple));
}

TEST_F(TokenSourceTest, AChangedFileIsReadWithoutBeingAsked) {
  WriteTokens(path_, Entry(kGreen, "green"));
  absl::StatusOr<std::unique_ptr<TokenSource>> source = TokenSource::Open(path_);
  ASSERT_OK(source);
  (*source)->StartWatching(absl::Milliseconds(50), /*sighup=*/false);
  WriteTokens(path_, Entry(kPurple, "purple"));
  EXPECT_TRUE(Eventually([&] { return As(**source, kPurple).ok(); }));
  EXPECT_FALSE(As(**source, kGreen).ok());
  // A bad version is logged once and changes nothing; the next good one is read.
  WriteTokens(path_, "[");
  WriteTokens(path_, absl::StrCat(Entry(kPurple, "purple"), ",", Entry(kGreen, "green")));
  EXPECT_TRUE(Eventually([&] { return As(**source, kGreen).ok(); }));
  EXPECT_OK(As(**source, kPurple));
}

TEST_F(TokenSourceTest, StreamsEndWhenTheirTokenIsRevokedReassignedOrExpires) {
  // Expires in a few seconds: long enough to be valid when the test reads it on a slow machine.
  const std::string soon = absl::FormatTime(R"(, "expiresAt": "%Y-%m-%dT%H:%M:%SZ")",
                                            absl::Now() + absl::Seconds(5), absl::UTCTimeZone());
  constexpr char kBrief[] = "brief-token-0123456789abcdef";
  WriteTokens(path_, absl::StrCat(Entry(kGreen, "green"), ",", Entry(kPurple, "purple"), ",",
                                  Entry(kBrief, "brief", soon)));
  absl::StatusOr<std::unique_ptr<TokenSource>> source = TokenSource::Open(path_);
  ASSERT_OK(source);
  absl::StatusOr<Caller> green = As(**source, kGreen);
  absl::StatusOr<Caller> purple = As(**source, kPurple);
  absl::StatusOr<Caller> brief = As(**source, kBrief);
  ASSERT_OK(green);
  ASSERT_OK(purple);
  ASSERT_OK(brief);
  std::atomic<int> green_ended{0}, purple_ended{0}, brief_ended{0}, dropped_ended{0};
  auto green_watch = (*source)->OnRevoke(*green, [&] { ++green_ended; });
  auto purple_watch = (*source)->OnRevoke(*purple, [&] { ++purple_ended; });
  auto brief_watch = (*source)->OnRevoke(*brief, [&] { ++brief_ended; });
  auto dropped_watch = (*source)->OnRevoke(*green, [&] { ++dropped_ended; });
  ASSERT_NE(green_watch, nullptr);
  dropped_watch.reset();  // its stream is done: never called
  // A caller without a token (authentication off) needs no watch.
  EXPECT_EQ((*source)->OnRevoke(Caller{}, [] {}), nullptr);

  // Green's token is gone; purple's is given to another principal.
  WriteTokens(path_, absl::StrCat(Entry(kPurple, "mallory"), ",", Entry(kBrief, "brief", soon)));
  ASSERT_OK((*source)->Reload());
  EXPECT_EQ(green_ended.load(), 1);
  EXPECT_EQ(purple_ended.load(), 1);
  EXPECT_EQ(brief_ended.load(), 0);
  // The brief token expires while the file stays the same: the watch ends its stream.
  (*source)->StartWatching(absl::Milliseconds(50), /*sighup=*/false);
  EXPECT_TRUE(Eventually([&] { return brief_ended.load() == 1; }));
  ASSERT_OK((*source)->Reload());
  EXPECT_EQ(green_ended.load(), 1);  // once only
  EXPECT_EQ(dropped_ended.load(), 0);
}

// Rotation: a principal's new token is added beside the old one; during the overlap both
// authenticate as the same principal and a stream opened with the old one stays open; when the
// old one leaves the file it is refused and only its own streams end.
TEST_F(TokenSourceTest, RotationKeepsOldAndNewValidDuringTheOverlap) {
  constexpr char kGreenNext[] = "green-next-token-0123456789abcdef";
  WriteTokens(path_, Entry(kGreen, "green"));
  absl::StatusOr<std::unique_ptr<TokenSource>> source = TokenSource::Open(path_);
  ASSERT_OK(source);
  absl::StatusOr<Caller> old_caller = As(**source, kGreen);
  ASSERT_OK(old_caller);
  std::atomic<int> old_ended{0}, new_ended{0};
  auto old_watch = (*source)->OnRevoke(*old_caller, [&] { ++old_ended; });

  WriteTokens(path_, absl::StrCat(Entry(kGreen, "green"), ",", Entry(kGreenNext, "green")));
  ASSERT_OK((*source)->Reload());
  absl::StatusOr<Caller> new_caller = As(**source, kGreenNext);
  ASSERT_OK(new_caller);
  EXPECT_EQ(new_caller->principal, "green");
  absl::StatusOr<Caller> still_old = As(**source, kGreen);
  ASSERT_OK(still_old);
  EXPECT_EQ(still_old->principal, "green");
  EXPECT_EQ(old_ended.load(), 0);
  auto new_watch = (*source)->OnRevoke(*new_caller, [&] { ++new_ended; });

  WriteTokens(path_, Entry(kGreenNext, "green"));
  ASSERT_OK((*source)->Reload());
  EXPECT_EQ(As(**source, kGreen).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_OK(As(**source, kGreenNext));
  EXPECT_EQ(old_ended.load(), 1);
  EXPECT_EQ(new_ended.load(), 0);
}

TEST_F(TokenSourceTest, FixedTokensHaveNothingToReload) {
  TokenSource fixed(nullptr);
  EXPECT_EQ(fixed.Reload().code(), absl::StatusCode::kFailedPrecondition);
  fixed.StartWatching(absl::Milliseconds(10), false);  // nothing to watch: no thread
}

}  // namespace
}  // namespace coordinator
