// The interfaces the coordinator's cards list: the 1.0 ones, then 0.3's, whose gRPC entry (0.3
// has no tenant) appears only on the card of the agent a call without a tenant reaches.
#include "coordinator/a2a/cards.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace coordinator {
namespace {

std::vector<std::string> Interfaces(const a2apb::AgentCard& card) {
  std::vector<std::string> out;
  for (const a2apb::AgentInterface& i : card.supported_interfaces()) {
    out.push_back(i.protocol_version() + " " + i.protocol_binding() + " " + i.url() +
                  (i.tenant().empty() ? "" : " tenant=" + i.tenant()));
  }
  return out;
}

CardAddresses Addresses(const std::string& tenantless_agent) {
  CardAddresses addresses;
  addresses.grpc_address = "127.0.0.1:50051";
  addresses.http_base_url = "http://127.0.0.1:8080";
  addresses.tenantless_agent = tenantless_agent;
  return addresses;
}

TEST(CardsTest, The03GrpcInterfaceIsListedOnlyForTheAgentReachedWithoutATenant) {
  v1::Agent agent;
  agent.set_name("purple one");
  const std::string base = "http://127.0.0.1:8080/agents/purple%20one";
  EXPECT_EQ(
      Interfaces(PublishedAgentCard(agent, Addresses("purple one"))),
      (std::vector<std::string>{"1.0 JSONRPC " + base, "1.0 HTTP+JSON " + base,
                                "1.0 GRPC 127.0.0.1:50051 tenant=purple one", "0.3 JSONRPC " + base,
                                "0.3 HTTP+JSON " + base, "0.3 GRPC 127.0.0.1:50051"}));
  // Another agent is the default, or there is none: 0.3's gRPC would not reach this one.
  for (const std::string& other : {std::string("green"), std::string()}) {
    EXPECT_EQ(Interfaces(PublishedAgentCard(agent, Addresses(other))),
              (std::vector<std::string>{"1.0 JSONRPC " + base, "1.0 HTTP+JSON " + base,
                                        "1.0 GRPC 127.0.0.1:50051 tenant=purple one",
                                        "0.3 JSONRPC " + base, "0.3 HTTP+JSON " + base}))
        << other;
  }
  // Without the HTTP port: gRPC only.
  CardAddresses grpc_only = Addresses("purple one");
  grpc_only.http_base_url.clear();
  EXPECT_EQ(Interfaces(PublishedAgentCard(agent, grpc_only)),
            (std::vector<std::string>{"1.0 GRPC 127.0.0.1:50051 tenant=purple one",
                                      "0.3 GRPC 127.0.0.1:50051"}));
}

}  // namespace
}  // namespace coordinator
