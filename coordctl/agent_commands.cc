// coordctl agent ...: the registry of A2A agents behind the coordinator's gateway.
#include <ostream>

#include "absl/strings/str_cat.h"
#include "coordctl/cli.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::AgentRegistry;

int RunRegister(const Env& env, const ParsedArgs& args) {
  auto stub = AgentRegistry::NewStub(env.channel);
  coordinator::v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name(args.positional[0]);
  request.mutable_agent()->set_endpoint(args.positional[1]);
  if (args.has("description")) {
    request.mutable_agent()->mutable_card()->set_name(args.positional[0]);
    request.mutable_agent()->mutable_card()->set_description(args.get("description"));
  }
  coordinator::v1::Agent agent;
  grpc::Status s = stub->RegisterAgent(env.NewContext().get(), request, &agent);
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(agent) << std::endl;
  } else {
    *env.out << "registered " << agent.name() << " at " << agent.endpoint() << std::endl;
  }
  return kExitOk;
}

int RunList(const Env& env, const ParsedArgs& args) {
  auto stub = AgentRegistry::NewStub(env.channel);
  coordinator::v1::ListAgentsRequest request;
  request.set_page_size(1000);
  while (true) {
    coordinator::v1::ListAgentsResponse page;
    grpc::Status s = stub->ListAgents(env.NewContext().get(), request, &page);
    if (!s.ok()) return ReportRpcError(env, s);
    for (const coordinator::v1::Agent& agent : page.agents()) {
      if (args.flag("json")) {
        *env.out << ToJson(agent) << "\n";
      } else {
        *env.out << agent.name() << "\t" << agent.endpoint() << "\n";
      }
    }
    if (page.next_page_token().empty()) break;
    request.set_page_token(page.next_page_token());
  }
  env.out->flush();
  return kExitOk;
}

int RunRemove(const Env& env, const ParsedArgs& args) {
  auto stub = AgentRegistry::NewStub(env.channel);
  coordinator::v1::DeleteAgentRequest request;
  request.set_name(args.positional[0]);
  google::protobuf::Empty empty;
  grpc::Status s = stub->DeleteAgent(env.NewContext().get(), request, &empty);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << "removed " << args.positional[0] << std::endl;
  return kExitOk;
}

}  // namespace

void AddAgentCommands(std::vector<Command>* commands) {
  commands->push_back({{"agent", "register"},
                       "<name> <host:port> [--description D] [--json]",
                       "register an A2A agent (or move it to a new address); clients reach it "
                       "through the coordinator with tenant = <name>",
                       {"description"},
                       {"json"},
                       2,
                       2,
                       false,
                       RunRegister});
  commands->push_back({{"agent", "list"},
                       "[--json]",
                       "list registered agents: name and gRPC address",
                       {},
                       {"json"},
                       0,
                       0,
                       false,
                       RunList});
  commands->push_back({{"agent", "rm"},
                       "<name>",
                       "remove an agent from the registry (its tasks stay readable)",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunRemove});
}

}  // namespace coordctl
