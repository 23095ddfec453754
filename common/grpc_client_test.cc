#include "common/grpc_client.h"

#include <string>

#include "gtest/gtest.h"

namespace common {
namespace {

TEST(ExpandTarget, ASingleTargetIsLeftAsItIs) {
  for (const char* target : {"127.0.0.1:50051", "coordinator.internal:50051", "dns:///c:1"}) {
    absl::StatusOr<ExpandedTarget> e = ExpandTarget(target);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->target, target);
    EXPECT_EQ(e->authority, "");
  }
}

TEST(ExpandTarget, AListBecomesOneAddressListInOrder) {
  absl::StatusOr<ExpandedTarget> e = ExpandTarget("127.0.0.1:1,127.0.0.2:2,127.0.0.1:1");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->target, "ipv4:127.0.0.1:1,127.0.0.2:2");
  EXPECT_EQ(e->authority, "127.0.0.1:1");
  e = ExpandTarget("[::1]:5,[::1]:6");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->target, "ipv6:[::1]:5,[::1]:6");
  // A name resolves (to its IPv4 addresses first) and names the authority.
  e = ExpandTarget("localhost:7,127.0.0.2:8");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->target, "ipv4:127.0.0.1:7,127.0.0.2:8");
  EXPECT_EQ(e->authority, "localhost:7");
}

TEST(ExpandTarget, RefusesMalformedListsWithTheReason) {
  for (const char* bad : {",", "127.0.0.1:1,", ",127.0.0.1:1", "a,b", "127.0.0.1:1,127.0.0.1:0",
                          "127.0.0.1:1,127.0.0.1:70000", "127.0.0.1:1,:5", "127.0.0.1:1,[::1]:2",
                          "127.0.0.1:1,no-such-host.invalid:2"}) {
    absl::StatusOr<ExpandedTarget> e = ExpandTarget(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << bad << ": " << e.status();
  }
  // Oversized: refused on its first bad entry.
  EXPECT_FALSE(ExpandTarget(std::string(1 << 20, ',')).ok());
}

}  // namespace
}  // namespace common
