// Unit tests of the agent registry store.
#include "coordinator/store/a2a/agent_registry.h"

#include <memory>

#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using testing_util::TempDir;

TEST(AgentRegistryStoreTest, RegisterListDelete) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::testing::OpenTestStore(dir.Sub("db"));
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

// The HTTP port's own path segments cannot be agent names: /console/... would never reach an
// agent named "console" over HTTP+JSON.
TEST(AgentRegistryStoreTest, NamesTheHttpPortUsesAreRefused) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::testing::OpenTestStore(dir.Sub("db"));
  ASSERT_OK(store);
  AgentRegistryStore registry(store->get());
  for (const char* name : {"agents", "console", "metrics", ".well-known", "v1"}) {
    v1::Agent agent;
    agent.set_name(name);
    agent.set_endpoint("127.0.0.1:1234");
    absl::StatusOr<v1::Agent> registered = registry.Register(agent);
    EXPECT_EQ(registered.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(registered.status().message().find("reserved"), std::string::npos) << name;
    EXPECT_EQ(registry.Get(name).status().code(), absl::StatusCode::kNotFound) << name;
  }
  v1::Agent fine;
  fine.set_name("consoles");
  fine.set_endpoint("127.0.0.1:1234");
  EXPECT_OK(registry.Register(fine));
}

TEST(AgentRegistryStoreTest, BindingAndCardUrlAreStoredAndEndpointsSuitTheBinding) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::testing::OpenTestStore(dir.Sub("db"));
  ASSERT_OK(store);
  AgentRegistryStore registry(store->get());
  v1::Agent agent;
  agent.set_name("by-endpoint");
  agent.set_endpoint("127.0.0.1:1234");
  absl::StatusOr<v1::Agent> stored = registry.Register(agent);
  ASSERT_OK(stored);
  EXPECT_EQ(stored->protocol_binding(), "GRPC");

  agent.set_name("rpc");
  agent.set_protocol_binding("JSONRPC");
  agent.set_endpoint("http://127.0.0.1:8000/a2a");
  agent.set_card_url("http://127.0.0.1:8000/.well-known/agent-card.json");
  ASSERT_OK(registry.Register(agent));
  absl::StatusOr<v1::Agent> read = registry.Get("rpc");
  ASSERT_OK(read);
  EXPECT_EQ(read->protocol_binding(), "JSONRPC");
  EXPECT_EQ(read->endpoint(), "http://127.0.0.1:8000/a2a");
  EXPECT_EQ(read->card_url(), "http://127.0.0.1:8000/.well-known/agent-card.json");

  agent.set_protocol_binding("GRPC");
  agent.set_endpoint("https://agent.example:443");
  EXPECT_OK(registry.Register(agent));

  struct Bad {
    const char* binding;
    const char* endpoint;
  };
  for (const Bad& bad : {Bad{"JSONRPC", "127.0.0.1:8000"}, Bad{"HTTP+JSON", "ftp://x/"},
                         Bad{"GRPC", "http://127.0.0.1:8000/a2a"}, Bad{"GRPC", "https://h:1/path"},
                         Bad{"WEBSOCKET", "http://h/"}}) {
    agent.set_protocol_binding(bad.binding);
    agent.set_endpoint(bad.endpoint);
    EXPECT_EQ(registry.Register(agent).status().code(), absl::StatusCode::kInvalidArgument)
        << bad.binding << " " << bad.endpoint;
  }
  agent.set_protocol_binding("JSONRPC");
  agent.set_endpoint("http://127.0.0.1:8000/a2a");
  agent.set_card_url("not a url");
  EXPECT_EQ(registry.Register(agent).status().code(), absl::StatusCode::kInvalidArgument);
  // Nothing refused replaced what was stored.
  read = registry.Get("rpc");
  ASSERT_OK(read);
  EXPECT_EQ(read->protocol_binding(), "GRPC");
  EXPECT_EQ(read->endpoint(), "https://agent.example:443");
}

}  // namespace
}  // namespace coordinator
