// Agent cards: parsed leniently, and the interface chosen as section 8.3 lets a client choose.
#include "coordinator/a2a/card_fetch.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

namespace a2apb = ::lf::a2a::v1;

a2apb::AgentCard Card(const std::string& interfaces) {
  absl::StatusOr<a2apb::AgentCard> card =
      ParseAgentCard(R"({"name":"a","supportedInterfaces":[)" + interfaces + "]}");
  EXPECT_OK(card);
  return card.value_or(a2apb::AgentCard());
}

TEST(AgentCardTest, ParsesWithUnknownFieldsAndRefusesWhatIsNotACard) {
  absl::StatusOr<a2apb::AgentCard> card = ParseAgentCard(
      R"({"name":"n","futureField":[1,{"a":2}],"capabilities":{"streaming":true,"new":1}})");
  ASSERT_OK(card);
  EXPECT_EQ(card->name(), "n");
  EXPECT_TRUE(card->capabilities().streaming());
  for (const char* bad : {"", "<html>", "[]", "\"card\"", R"({"name":7})"}) {
    EXPECT_EQ(ParseAgentCard(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(AgentCardTest, ChoosesGrpcThenJsonRpcThenHttpJson) {
  const common::HostAllowList loopback;
  const std::string rest =
      R"({"url":"http://127.0.0.1:9/rest/","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"})";
  const std::string rpc =
      R"({"url":"http://127.0.0.1:9/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0",)"
      R"("tenant":"t"})";
  const std::string grpc =
      R"({"url":"http://localhost:7001","protocolBinding":"GRPC","protocolVersion":"1.0"})";
  absl::StatusOr<ChosenInterface> chosen =
      ChooseInterface(Card(rest + "," + rpc + "," + grpc), loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "GRPC");
  EXPECT_EQ(chosen->endpoint, "localhost:7001");
  chosen = ChooseInterface(Card(rest + "," + rpc), loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "JSONRPC");
  EXPECT_EQ(chosen->endpoint, "http://127.0.0.1:9/rpc");
  EXPECT_EQ(chosen->tenant, "t");
  chosen = ChooseInterface(Card(rest), loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "HTTP+JSON");
  EXPECT_EQ(chosen->endpoint, "http://127.0.0.1:9/rest/");
}

TEST(AgentCardTest, SkipsWhatWeDoNotSpeakAndWhatTheAllowListRefuses) {
  const common::HostAllowList loopback;
  // Another protocol version, another binding, a malformed URL: nothing to speak.
  absl::StatusOr<ChosenInterface> chosen = ChooseInterface(
      Card(R"({"url":"http://127.0.0.1:9/","protocolBinding":"JSONRPC","protocolVersion":"0.2"},)"
           R"({"url":"127.0.0.1:9","protocolBinding":"GRPC","protocolVersion":"2.0"},)"
           R"({"url":"ws://127.0.0.1:9/","protocolBinding":"WEBSOCKET"},)"
           R"({"url":"127.0.0.1","protocolBinding":"GRPC"})"),
      loopback);
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kFailedPrecondition);
  // 0.3 over gRPC: dialled as host:port.
  chosen = ChooseInterface(
      Card(R"({"url":"http://127.0.0.1:9/","protocolBinding":"GRPC","protocolVersion":"0.3.0"})"),
      loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "GRPC");
  EXPECT_EQ(chosen->endpoint, "127.0.0.1:9");
  EXPECT_EQ(chosen->version, "0.3");
  // The version first: a 1.0 HTTP+JSON interface before a 0.3 JSON-RPC one listed earlier.
  chosen = ChooseInterface(
      Card(
          R"({"url":"http://127.0.0.1:9/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},)"
          R"({"url":"http://127.0.0.1:9/new","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"})"),
      loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "HTTP+JSON");
  EXPECT_EQ(chosen->version, "1.0");
  chosen = ChooseInterface(
      Card(
          R"({"url":"http://127.0.0.1:9/old","protocolBinding":"JSONRPC","protocolVersion":"0.3.0"})"),
      loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->endpoint, "http://127.0.0.1:9/old");
  EXPECT_EQ(chosen->version, "0.3");
  EXPECT_EQ(ChooseInterface(Card(""), loopback).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A gRPC interface elsewhere is passed over for an allowed JSON-RPC one.
  chosen = ChooseInterface(
      Card(R"({"url":"agent.example:443","protocolBinding":"GRPC"},)"
           R"({"url":"http://127.0.0.1:9/rpc","protocolBinding":"jsonrpc","protocolVersion":"1"})"),
      loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->binding, "JSONRPC");
  // A gRPC URL with a path names nothing gRPC can dial.
  chosen = ChooseInterface(Card(R"({"url":"https://agent.example/a2a","protocolBinding":"GRPC"})"),
                           loopback);
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kFailedPrecondition);
  // Only hosts the allow-list refuses.
  chosen = ChooseInterface(Card(R"({"url":"https://agent.example","protocolBinding":"GRPC"})"),
                           loopback);
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<common::HostAllowList> everyone = common::HostAllowList::Parse("*");
  ASSERT_OK(everyone);
  chosen = ChooseInterface(Card(R"({"url":"https://agent.example","protocolBinding":"GRPC"})"),
                           *everyone);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->endpoint, "https://agent.example:443");
}

// An interface whose endpoint the registry would refuse to store (past its 256-byte limit) is
// passed over, saying why; found by fuzz_agent_card (its input is in the seed corpus).
TEST(AgentCardTest, AnInterfaceTheRegistryWouldRefuseIsPassedOver) {
  const common::HostAllowList loopback;
  const std::string long_url = "http://127.0.0.1:9/" + std::string(300, 'v');
  const std::string too_long =
      R"({"url":")" + long_url + R"(","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"})";
  absl::StatusOr<ChosenInterface> chosen = ChooseInterface(Card(too_long), loopback);
  EXPECT_EQ(chosen.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(chosen.status().message().find("the limit is 256 bytes"), std::string::npos)
      << chosen.status();
  chosen = ChooseInterface(
      Card(too_long + R"(,{"url":"http://127.0.0.1:9/rest","protocolBinding":"HTTP+JSON"})"),
      loopback);
  ASSERT_OK(chosen);
  EXPECT_EQ(chosen->endpoint, "http://127.0.0.1:9/rest");
}

TEST(AgentCardTest, TheTenantComesFromTheInterfaceRegisteredOver) {
  v1::Agent agent;
  agent.set_protocol_binding("JSONRPC");
  agent.set_endpoint("http://127.0.0.1:9/rpc");
  *agent.mutable_card() =
      Card(R"({"url":"http://127.0.0.1:9/other","protocolBinding":"JSONRPC","tenant":"no"},)"
           R"({"url":"http://127.0.0.1:9/rpc","protocolBinding":"JSONRPC","tenant":"yes"})");
  EXPECT_EQ(InterfaceTenant(agent), "");  // registered by endpoint: no tenant, as before
  agent.set_card_url("http://127.0.0.1:9/card");
  EXPECT_EQ(InterfaceTenant(agent), "yes");
  EXPECT_EQ(EndpointUrl(agent), "http://127.0.0.1:9/rpc");
  agent.set_protocol_binding("GRPC");
  agent.set_endpoint("127.0.0.1:7001");
  EXPECT_EQ(EndpointUrl(agent), "http://127.0.0.1:7001");
}

TEST(AgentCardTest, AFetchedCardBecomesTheAgentToStore) {
  const common::HostAllowList loopback;
  v1::Agent request;
  request.set_name("planner");
  request.set_card_url("http://127.0.0.1:9/card");
  absl::StatusOr<v1::Agent> agent =
      AgentFromCard(request,
                    R"({"name":"p","supportedInterfaces":[{"url":"http://127.0.0.1:9/rpc",)"
                    R"("protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":"t"}]})",
                    loopback);
  ASSERT_OK(agent);
  EXPECT_EQ(agent->name(), "planner");
  EXPECT_EQ(agent->card_url(), "http://127.0.0.1:9/card");
  EXPECT_EQ(agent->endpoint(), "http://127.0.0.1:9/rpc");
  EXPECT_EQ(agent->protocol_binding(), "JSONRPC");
  EXPECT_EQ(agent->card().name(), "p");
  EXPECT_EQ(InterfaceTenant(*agent), "t");

  EXPECT_EQ(AgentFromCard(request, "<html>", loopback).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AgentFromCard(request,
                          R"({"supportedInterfaces":[{"url":"http://agent.example:9/rpc",)"
                          R"("protocolBinding":"JSONRPC"}]})",
                          loopback)
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(AgentFromCard(request, R"({"name":"p"})", loopback).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace coordinator
