// Unit tests of the agent registry store.
#include "coordinator/store/agent_registry_store.h"

#include <memory>

#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using testing_util::TempDir;

TEST(AgentRegistryStoreTest, RegisterListDelete) {
  TempDir dir;
  storage::StoreOptions options;
  options.path = dir.Sub("db");
  absl::StatusOr<std::unique_ptr<storage::RocksStore>> store = storage::RocksStore::Open(options);
  ASSERT_OK(store);
  AgentRegistryStore registry(store->get());
  int registered = 0;
  registry.set_on_register([&](const v1::Agent&) { ++registered; });
  v1::Agent agent;
  agent.set_name("echo");
  agent.set_endpoint("127.0.0.1:1234");
  ASSERT_OK(registry.Register(agent));
  agent.set_endpoint("127.0.0.1:2345");
  ASSERT_OK(registry.Register(agent));
  EXPECT_EQ(registered, 2);
  absl::StatusOr<v1::Agent> read = registry.Get("echo");
  ASSERT_OK(read);
  EXPECT_EQ(read->endpoint(), "127.0.0.1:2345");
  agent.set_endpoint("no-port");
  EXPECT_EQ(registry.Register(agent).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<v1::ListAgentsResponse> list = registry.List({});
  ASSERT_OK(list);
  EXPECT_EQ(list->agents_size(), 1);
  ASSERT_OK(registry.Delete("echo"));
  EXPECT_EQ(registry.Get("echo").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coordinator
