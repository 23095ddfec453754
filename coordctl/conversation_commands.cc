// coordctl convo ...: a context's conversation.
#include <iostream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "coordctl/cli.h"
#include "coordinator/v1/conversation.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::ConversationService;

std::string RoleName(coordinator::v1::Role role) {
  std::string name = coordinator::v1::Role_Name(role);
  absl::string_view short_name = name;
  absl::ConsumePrefix(&short_name, "ROLE_");
  return absl::AsciiStrToLower(short_name);
}

int RunAppend(const Env& env, const ParsedArgs& args) {
  coordinator::v1::AppendMessageRequest request;
  request.set_context_id(args.positional[0]);
  const std::string role = absl::AsciiStrToUpper(args.get("role"));
  coordinator::v1::Role parsed_role;
  if (!coordinator::v1::Role_Parse(absl::StrCat("ROLE_", role), &parsed_role) ||
      parsed_role == coordinator::v1::ROLE_UNSPECIFIED) {
    return Fail(env, "--role must be user, agent or system", kExitUsage);
  }
  request.set_role(parsed_role);
  if (args.has("tokens")) {
    absl::StatusOr<int64_t> tokens = ParseIntArg("--tokens", args.get("tokens"));
    if (!tokens.ok()) return Fail(env, std::string(tokens.status().message()), kExitUsage);
    request.set_tokens(*tokens);
  }
  std::vector<std::string> words(args.positional.begin() + 1, args.positional.end());
  if (words.size() == 1 && words[0] == "-") {
    request.set_text(std::string(std::istreambuf_iterator<char>(std::cin), {}));
  } else {
    request.set_text(absl::StrJoin(words, " "));
  }
  auto stub = ConversationService::NewStub(env.channel);
  coordinator::v1::AppendMessageResponse response;
  grpc::Status s = stub->AppendMessage(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << "message " << response.message().seq() << ", " << response.step_count()
           << " agent steps, " << response.total_tokens() << " tokens in all" << std::endl;
  return kExitOk;
}

int RunConversationShow(const Env& env, const ParsedArgs& args) {
  coordinator::v1::GetConversationRequest request;
  request.set_context_id(args.positional[0]);
  if (args.has("tail")) {
    absl::StatusOr<int64_t> tail = ParseIntArg("--tail", args.get("tail"));
    if (!tail.ok() || *tail <= 0) return Fail(env, "--tail takes a positive number", kExitUsage);
    request.set_tail(*tail);
  }
  request.set_page_size(1000);
  auto stub = ConversationService::NewStub(env.channel);
  coordinator::v1::GetConversationResponse all;
  const grpc::Status s = ForEachPage(env, *stub, &ConversationService::Stub::GetConversation,
                                     request, [&](coordinator::v1::GetConversationResponse& page) {
                                       all.set_step_count(page.step_count());
                                       all.set_message_count(page.message_count());
                                       all.set_total_tokens(page.total_tokens());
                                       for (auto& m : *page.mutable_messages())
                                         *all.add_messages() = std::move(m);
                                     });
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(all) << std::endl;
    return kExitOk;
  }
  for (const auto& m : all.messages()) {
    *env.out << "#" << m.seq() << " " << RoleName(m.role()) << " (" << m.tokens()
             << " tokens): " << m.text() << "\n";
  }
  *env.out << "-- " << all.message_count() << " messages, " << all.step_count() << " agent steps, "
           << all.total_tokens() << " tokens" << std::endl;
  return kExitOk;
}

}  // namespace

void AddConversationCommands(std::vector<Command>* commands) {
  commands->push_back({{"convo", "append"},
                       "<context_id> --role user|agent|system [--tokens N] <text...|->",
                       "append a message (\"-\" reads the text from stdin)",
                       {"role", "tokens"},
                       {},
                       2,
                       -1,
                       false,
                       RunAppend});
  commands->push_back({{"convo", "show"},
                       "<context_id> [--tail N] [--json]",
                       "show the conversation, or its last N messages",
                       {"tail"},
                       {"json"},
                       1,
                       1,
                       false,
                       RunConversationShow});
}

}  // namespace coordctl
