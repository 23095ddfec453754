// coordctl agent ...: the registry of A2A agents behind the coordinator's gateway.
#include <ostream>

#include "absl/strings/str_cat.h"
#include "coordctl/cli.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::AgentRegistry;

int RunRegister(const Env& env, const ParsedArgs& args) {
  // Either <host:port> (a gRPC agent) or --card <url> (any binding, read from the card).
  const bool by_card = args.has("card");
  if (by_card == (args.positional.size() == 2)) {
    return Fail(env, "give the agent's <host:port> or --card <url>, not both", kExitUsage);
  }
  if (by_card && args.has("description")) {
    return Fail(env, "--description is for agents registered by <host:port>; a card has its own",
                kExitUsage);
  }
  auto stub = AgentRegistry::NewStub(env.channel);
  coordinator::v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name(args.positional[0]);
  if (by_card) {
    request.mutable_agent()->set_card_url(args.get("card"));
  } else {
    request.mutable_agent()->set_endpoint(args.positional[1]);
  }
  if (args.has("max-in-flight")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--max-in-flight", args.get("max-in-flight"));
    if (!n.ok() || *n < 0 || *n > 10000) {
      return Fail(env, "--max-in-flight takes 0 (no limit) to 10000", kExitUsage);
    }
    request.mutable_agent()->set_max_in_flight(static_cast<int32_t>(*n));
  }
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
    *env.out << "registered " << agent.name() << " at " << agent.endpoint();
    if (!agent.card_url().empty()) {
      *env.out << " (" << agent.protocol_binding()
               << (agent.protocol_version() == "0.3" ? " A2A 0.3" : "") << ", card "
               << agent.card_url() << ")";
    }
    *env.out << std::endl;
  }
  return kExitOk;
}

int RunAgentList(const Env& env, const ParsedArgs& args) {
  auto stub = AgentRegistry::NewStub(env.channel);
  coordinator::v1::ListAgentsRequest request;
  request.set_page_size(1000);
  const grpc::Status s = ForEachPage(
      env, *stub, &AgentRegistry::Stub::ListAgents, request,
      [&](const coordinator::v1::ListAgentsResponse& page) {
        for (const coordinator::v1::Agent& agent : page.agents()) {
          if (args.flag("json")) {
            *env.out << ToJson(agent) << "\n";
          } else {
            // name, endpoint, binding, card URL ("-" for none): the first two columns as before.
            *env.out << agent.name() << "\t" << agent.endpoint() << "\t"
                     << (agent.protocol_binding().empty() ? "GRPC" : agent.protocol_binding())
                     << (agent.protocol_version() == "0.3" ? " 0.3" : "") << "\t"
                     << (agent.card_url().empty() ? "-" : agent.card_url())
                     << (agent.max_in_flight() > 0
                             ? absl::StrCat("\tmax in flight ", agent.max_in_flight())
                             : "")
                     << "\n";
          }
        }
      });
  if (!s.ok()) return ReportRpcError(env, s);
  env.out->flush();
  return kExitOk;
}

int RunAgentRemove(const Env& env, const ParsedArgs& args) {
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
                       "<name> (<host:port> [--description D] | --card <url>) "
                       "[--max-in-flight N] [--json]",
                       "register an A2A agent (or move it to a new address): a gRPC agent by "
                       "address, or any agent by its card URL (the coordinator fetches the card "
                       "and picks GRPC, else JSONRPC, else HTTP+JSON); clients reach it through "
                       "the coordinator with tenant = <name>; --max-in-flight N: at most N "
                       "messages delivered to it at once (0: no limit; unset keeps the last)",
                       {"description", "card", "max-in-flight"},
                       {"json"},
                       1,
                       2,
                       false,
                       RunRegister});
  commands->push_back({{"agent", "list"},
                       "[--json]",
                       "list registered agents: name, address, binding, card URL (- for none)",
                       {},
                       {"json"},
                       0,
                       0,
                       false,
                       RunAgentList});
  commands->push_back({{"agent", "rm"},
                       "<name>",
                       "remove an agent from the registry (its tasks stay readable)",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunAgentRemove});
}

}  // namespace coordctl
