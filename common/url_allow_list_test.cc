#include "common/url_allow_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace common {
namespace {

using ::testing::HasSubstr;

TEST(ParseHttpUrlTest, NormalizesHostAndPort) {
  absl::StatusOr<HttpUrl> url = ParseHttpUrl("HTTPS://Hooks.Example.COM./a/b?c#d");
  ASSERT_OK(url);
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->host, "hooks.example.com");
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(url->path, "/a/b?c#d");

  url = ParseHttpUrl("http://127.0.0.1:8080");
  ASSERT_OK(url);
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->HostPort(), "127.0.0.1:8080");

  url = ParseHttpUrl("http://[::1]:9000/hook");
  ASSERT_OK(url);
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9000);
  EXPECT_EQ(url->HostPort(), "[::1]:9000");

  url = ParseHttpUrl("http://example.com?x=1");
  ASSERT_OK(url);
  EXPECT_EQ(url->host, "example.com");
  EXPECT_EQ(url->port, 80);
}

TEST(ParseHttpUrlTest, RefusesHostileOrMalformedUrls) {
  for (const char* bad : {
           "",
           "example.com/hook",
           "ftp://example.com/",
           "file:///etc/passwd",
           "http://allowed.example@evil.example/",
           "http://user:pass@127.0.0.1/",
           "http://127.0.0.1@evil.example:80/",
           "http:///path",
           "http://:80/",
           "http://exa mple.com/",
           "http://example.com\t/",
           "http://evil.example\\@127.0.0.1/",
           "http://ex%61mple.com/",
           "http://example.com:0/",
           "http://example.com:65536/",
           "http://example.com:80x/",
           "http://example.com:/",
           "http://example.com:+80/",
           "http://::1/",
           "http://[::1/",
           "http://[not-v6]/",
           "http://[::1]x/",
           "http://.example.com/",
           "http://a..b/",
           "http://exa$mple.com/",
       }) {
    EXPECT_FALSE(ParseHttpUrl(bad).ok()) << bad;
  }
}

TEST(IsLoopbackHostTest, LoopbackAndNot) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.10.20.30"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("::ffff:127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::2"));
  EXPECT_FALSE(IsLoopbackHost("localhost.evil.example"));
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.evil.example"));
  EXPECT_FALSE(IsLoopbackHost("2130706433"));  // 127.0.0.1 as a number: not recognized, refused
}

TEST(HostAllowListTest, DefaultAllowsLoopbackOnly) {
  const HostAllowList list;
  EXPECT_OK(list.Check("http://127.0.0.1:9/hook", "f"));
  EXPECT_OK(list.Check("http://localhost./hook", "f"));
  EXPECT_OK(list.Check("https://[::1]:8443/", "f"));
  const absl::Status refused = list.Check("http://hooks.example.com/", "outbound_allow_hosts");
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.message(), HasSubstr("hooks.example.com:80"));
  EXPECT_THAT(refused.message(), HasSubstr("--outbound_allow_hosts"));
  EXPECT_THAT(refused.message(), HasSubstr("loopback only"));
  // Userinfo cannot smuggle a host past the check.
  EXPECT_EQ(list.Check("http://127.0.0.1@evil.example/", "f").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostAllowListTest, ListedHostsWithAndWithoutPorts) {
  absl::StatusOr<HostAllowList> list =
      HostAllowList::Parse(" Hooks.Example.com , models.example:8443,[2001:db8::1]:443, ");
  ASSERT_OK(list);
  EXPECT_OK(list->Check("https://hooks.example.com/a", "f"));
  EXPECT_OK(list->Check("http://HOOKS.EXAMPLE.COM.:1234/a", "f"));  // any port, any case
  EXPECT_OK(list->Check("https://models.example:8443/v1", "f"));
  EXPECT_EQ(list->Check("https://models.example/v1", "f").code(),
            absl::StatusCode::kPermissionDenied);  // 443, not 8443
  EXPECT_OK(list->Check("https://[2001:DB8::1]/", "f"));
  EXPECT_EQ(list->Check("http://[2001:db8::1]/", "f").code(), absl::StatusCode::kPermissionDenied);
  // A listed name does not allow its subdomains or names that merely start with it.
  EXPECT_EQ(list->Check("https://evil.hooks.example.com/", "f").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(list->Check("https://hooks.example.com.evil.example/", "f").code(),
            absl::StatusCode::kPermissionDenied);
  // An explicit list replaces the loopback default.
  EXPECT_EQ(list->Check("http://127.0.0.1/", "f").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(list->ToString(), "hooks.example.com,models.example:8443,[2001:db8::1]:443");
}

TEST(HostAllowListTest, StarAllowsEveryHost) {
  absl::StatusOr<HostAllowList> list = HostAllowList::Parse("*");
  ASSERT_OK(list);
  EXPECT_OK(list->Check("https://anything.example/", "f"));
  EXPECT_EQ(list->Check("https://a@anything.example/", "f").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostAllowListTest, MalformedEntriesAreRefused) {
  for (const char* bad :
       {"http://example.com", "example.com/path", "user@example.com", "example.com:0",
        "example.com:x", "::1", "[::1", "exa mple.com", "[zz]:80"}) {
    EXPECT_EQ(HostAllowList::Parse(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace common
