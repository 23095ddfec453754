// Unit tests of tenant routing (tenant_routing.h): which agent a request without a tenant goes
// to, and the errors that say how to choose one. Each test opens its own database.
#include "coordinator/a2a/tenant_routing.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

class TenantRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"));
    ASSERT_OK(store);
    store_ = *std::move(store);
    agents_ = std::make_unique<AgentRegistryStore>(store_.get());
  }

  void Register(const std::string& name) {
    v1::Agent agent;
    agent.set_name(name);
    agent.set_endpoint("127.0.0.1:1");
    ASSERT_OK(agents_->Register(agent));
  }

  absl::StatusOr<std::string> Resolve(const std::string& tenant,
                                      const std::string& default_agent = "") {
    return ResolveTenant(agents_.get(), default_agent, tenant);
  }

  int64_t AgentCount() {
    absl::StatusOr<AgentRegistryStore::NameSample> sample = agents_->SampleNames(0);
    EXPECT_OK(sample);
    return sample.ok() ? sample->total : -1;
  }

  testing_util::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<AgentRegistryStore> agents_;
};

TEST_F(TenantRoutingTest, ANamedTenantIsThatAgentWhenRegistered) {
  Register("echo");
  Register("other");
  absl::StatusOr<std::string> agent = Resolve("other", /*default_agent=*/"echo");
  ASSERT_OK(agent);
  EXPECT_EQ(*agent, "other");
  absl::StatusOr<std::string> missing = Resolve("nobody", "echo");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "nobody")) << missing.status();
}

TEST_F(TenantRoutingTest, NoTenantGoesToTheOnlyAgent) {
  Register("echo");
  absl::StatusOr<std::string> agent = Resolve("");
  ASSERT_OK(agent);
  EXPECT_EQ(*agent, "echo");
}

TEST_F(TenantRoutingTest, NoTenantGoesToTheDefaultAgentAmongSeveral) {
  Register("echo");
  Register("other");
  absl::StatusOr<std::string> agent = Resolve("", /*default_agent=*/"other");
  ASSERT_OK(agent);
  EXPECT_EQ(*agent, "other");
}

TEST_F(TenantRoutingTest, AnUnregisteredDefaultAgentIsNotFoundUntilItRegisters) {
  Register("echo");  // the only one, but the default names another: the default wins
  absl::StatusOr<std::string> agent = Resolve("", /*default_agent=*/"late");
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "late")) << agent.status();
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "--default_agent")) << agent.status();
  Register("late");
  agent = Resolve("", "late");
  ASSERT_OK(agent);
  EXPECT_EQ(*agent, "late");
}

TEST_F(TenantRoutingTest, NoTenantAndNoAgentIsAFailedPrecondition) {
  absl::StatusOr<std::string> agent = Resolve("");
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "no agent is registered"))
      << agent.status();
}

TEST_F(TenantRoutingTest, NoTenantAmongSeveralAgentsNamesThemAndHowToChoose) {
  Register("bravo");
  Register("alpha");
  absl::StatusOr<std::string> agent = Resolve("");
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(agent.status().message());
  // In the registry's key order, as coordctl agent list shows them.
  EXPECT_TRUE(absl::StrContains(message, "2 agents are registered: alpha, bravo")) << message;
  EXPECT_TRUE(absl::StrContains(message, "Set tenant")) << message;
  EXPECT_TRUE(absl::StrContains(message, "--default_agent")) << message;
  EXPECT_FALSE(absl::StrContains(message, "more")) << message;
}

TEST_F(TenantRoutingTest, TheListOfAgentsIsBounded) {
  for (int i = 0; i < kMaxListedAgents + 5; ++i) Register(absl::StrCat("agent-", 100 + i));
  absl::StatusOr<std::string> agent = Resolve("");
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(agent.status().message());
  EXPECT_TRUE(absl::StrContains(message, "25 agents are registered: agent-100, agent-101"))
      << message;
  EXPECT_TRUE(absl::StrContains(message, "agent-119 and 5 more")) << message;
  EXPECT_FALSE(absl::StrContains(message, "agent-120")) << message;

  // Long names: the list stops at about 1 KiB, whatever the count.
  for (char c = 'a'; c <= 'j'; ++c) Register(std::string(250, c));
  agent = Resolve("");
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(agent.status().message().size(), 2000u) << agent.status().message().size();
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "35 agents are registered"));
}

TEST_F(TenantRoutingTest, MalformedTenantsAreInvalidAndNotEchoed) {
  Register("echo");
  const std::string huge(1 << 20, 'x');
  for (const std::string& tenant :
       {std::string(257, 'a'), huge, std::string("ec\0ho", 5), std::string("ec\nho"),
        std::string("\xff\xfe"), std::string("\xc0\xaf")}) {
    absl::StatusOr<std::string> agent = Resolve(tenant, "echo");
    EXPECT_EQ(agent.status().code(), absl::StatusCode::kInvalidArgument) << agent.status();
    EXPECT_TRUE(absl::StartsWith(agent.status().message(), "tenant ")) << agent.status();
    EXPECT_LT(agent.status().message().size(), 200u);
  }
  EXPECT_EQ(AgentCount(), 1);
}

}  // namespace
}  // namespace coordinator
