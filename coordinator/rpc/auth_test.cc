#include "coordinator/rpc/auth.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;

constexpr char kAdminToken[] = "admin-token-0123456789abcdef";
constexpr char kGreenToken[] = "green-token-0123456789abcdef";
constexpr char kReaderToken[] = "reader-token-0123456789abcdef";
constexpr char kOldToken[] = "old-token-0123456789abcdefgh";

constexpr char kTokens[] = R"({"tokens": [
  {"token": "admin-token-0123456789abcdef", "principal": "ops", "role": "admin"},
  {"token": "green-token-0123456789abcdef", "principal": "green", "role": "agent"},
  {"token": "reader-token-0123456789abcdef", "principal": "dash", "role": "reader"},
  {"token": "old-token-0123456789abcdefgh", "principal": "green", "role": "agent",
   "expiresAt": "2020-01-01T00:00:00Z"}
]})";

std::unique_ptr<Authorizer> Load() {
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::FromJson(kTokens);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : nullptr;
}

absl::StatusOr<Caller> Call(const Authorizer& a, absl::string_view method,
                            const std::string& header) {
  std::vector<absl::string_view> headers;
  if (!header.empty()) headers.push_back(header);
  return a.Authorize(method, headers, absl::Now());
}

TEST(TokenFileTest, ParsesPrincipalsAndRoles) {
  std::unique_ptr<Authorizer> a = Load();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->size(), 4u);
  absl::StatusOr<Caller> green =
      Call(*a, "/coordinator.v1.ContextService/GetContext", absl::StrCat("Bearer ", kGreenToken));
  ASSERT_OK(green.status());
  EXPECT_TRUE(green->authenticated);
  EXPECT_EQ(green->principal, "green");
  EXPECT_EQ(green->role, Role::kAgent);
  EXPECT_TRUE(green->scoped());
  EXPECT_FALSE(green->unrestricted());
}

TEST(TokenFileTest, RefusesMalformedFiles) {
  const std::string valid_token = "\"token\": \"abcdefghijklmnopqrstuvwxyz\"";
  const std::pair<std::string, std::string> cases[] = {
      {"", "not a token file"},
      {"[]", "not a token file"},
      {"{\"tokens\": 3}", "not a token file"},
      {"{\"tokenz\": []}", "not a token file"},
      {"{}", "no tokens"},
      {"{\"tokens\": []}", "no tokens"},
      {absl::StrCat("{\"tokens\": [{", valid_token,
                    ", \"principal\": \"a\", \"role\": \"root\"}]}"),
       "unknown role \"root\""},
      {absl::StrCat("{\"tokens\": [{", valid_token, ", \"principal\": \"a\"}]}"), "unknown role"},
      {absl::StrCat("{\"tokens\": [{", valid_token, ", \"role\": \"admin\"}]}"),
       "principal is empty"},
      {absl::StrCat("{\"tokens\": [{", valid_token,
                    ", \"principal\": \"a\\u0001\", \"role\": \"admin\"}]}"),
       "principal"},
      {"{\"tokens\": [{\"token\": \"short\", \"principal\": \"a\", \"role\": \"admin\"}]}",
       "16 to 4096"},
      {"{\"tokens\": [{\"token\": \"has a space in the middle!\", \"principal\": \"a\", "
       "\"role\": \"admin\"}]}",
       "without spaces"},
      {absl::StrCat("{\"tokens\": [{", valid_token,
                    ", \"principal\": \"a\", \"role\": \"admin\"}, {", valid_token,
                    ", \"principal\": \"b\", \"role\": \"admin\"}]}"),
       "the same token appears twice"},
      {absl::StrCat(
           "{\"tokens\": [{", valid_token,
           ", \"principal\": \"a\", \"role\": \"admin\"}, {\"token\": "
           "\"zyxwvutsrqponmlkjihgfedcba\", \"principal\": \"a\", \"role\": \"reader\"}]}"),
       "already has role admin"},
      {absl::StrCat("{\"tokens\": [{", valid_token,
                    ", \"principal\": \"a\", \"role\": \"admin\", \"expiresAt\": \"tomorrow\"}]}"),
       "not a token file"},
  };
  for (const auto& [json, message] : cases) {
    absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::FromJson(json);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(a.status().message(), HasSubstr(message)) << json;
    // The error never repeats a token.
    EXPECT_THAT(a.status().message(), ::testing::Not(HasSubstr("abcdefghijklmnop"))) << json;
  }
}

TEST(TokenFileTest, FromFileNamesTheFileAndWarnsWhenOthersCanRead) {
  const testing_util::TempDir temp;
  const std::string& dir = temp.path();
  const std::string path = dir + "/tokens.json";
  std::ofstream(path) << kTokens;
  ::chmod(path.c_str(), 0644);
  std::vector<std::string> warnings;
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::FromFile(path, &warnings);
  ASSERT_OK(a.status());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("chmod 600"));

  ::chmod(path.c_str(), 0600);
  warnings.clear();
  ASSERT_OK(Authorizer::FromFile(path, &warnings).status());
  EXPECT_TRUE(warnings.empty());

  absl::StatusOr<std::unique_ptr<Authorizer>> missing = Authorizer::FromFile(dir + "/none.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("none.json"));

  std::ofstream(dir + "/bad.json") << "{\"tokens\": [{\"token\": 1}]}";
  absl::StatusOr<std::unique_ptr<Authorizer>> bad = Authorizer::FromFile(dir + "/bad.json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.json"));
}

TEST(AuthenticateTest, RefusesMissingMalformedUnknownAndExpiredTokens) {
  std::unique_ptr<Authorizer> a = Load();
  ASSERT_NE(a, nullptr);
  const std::string method = "/coordinator.v1.ContextService/GetContext";
  const std::pair<std::string, std::string> cases[] = {
      {"", "requires a token"},
      {kGreenToken, "expected \"Bearer <token>\""},
      {absl::StrCat("Basic ", kGreenToken), "expected \"Bearer <token>\""},
      {"Bearer", "expected \"Bearer <token>\""},
      {"Bearer ", "the token is empty"},
      {"Bearer    ", "the token is empty"},
      {"Bearer not-a-token-we-know-of-at-all", "not known"},
      {absl::StrCat("Bearer ", kGreenToken, "x"), "not known"},
      {absl::StrCat("Bearer ", kOldToken), "has expired"},
  };
  for (const auto& [header, message] : cases) {
    absl::StatusOr<Caller> caller = Call(*a, method, header);
    EXPECT_EQ(caller.status().code(), absl::StatusCode::kUnauthenticated) << header;
    EXPECT_THAT(caller.status().message(), HasSubstr(message)) << header;
    EXPECT_THAT(caller.status().message(), ::testing::Not(HasSubstr("0123456789"))) << header;
  }
  // Two authorization entries are refused, even when both are valid.
  std::vector<std::string> two = {absl::StrCat("Bearer ", kGreenToken),
                                  absl::StrCat("Bearer ", kAdminToken)};
  std::vector<absl::string_view> views(two.begin(), two.end());
  EXPECT_EQ(a->Authorize(method, views, absl::Now()).status().code(),
            absl::StatusCode::kUnauthenticated);
  // The scheme is case-insensitive (RFC 6750).
  EXPECT_OK(Call(*a, method, absl::StrCat("bearer ", kGreenToken)).status());
}

TEST(AuthenticateTest, ExpiryIsChecked) {
  std::unique_ptr<Authorizer> a = Load();
  ASSERT_NE(a, nullptr);
  std::vector<std::string> header = {absl::StrCat("Bearer ", kOldToken)};
  std::vector<absl::string_view> views(header.begin(), header.end());
  EXPECT_OK(a->Authenticate(views, absl::FromUnixSeconds(1577836799)).status());
  EXPECT_EQ(a->Authenticate(views, absl::FromUnixSeconds(1577836800)).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(PermissionTableTest, RolesAgainstMethods) {
  std::unique_ptr<Authorizer> a = Load();
  ASSERT_NE(a, nullptr);
  const std::string admin = absl::StrCat("Bearer ", kAdminToken);
  const std::string agent = absl::StrCat("Bearer ", kGreenToken);
  const std::string reader = absl::StrCat("Bearer ", kReaderToken);
  struct Case {
    const char* method;
    bool reader_ok;
    bool agent_ok;
  };
  const Case cases[] = {
      {"/coordinator.v1.ContextService/GetContext", true, true},
      {"/coordinator.v1.ContextService/ListCommands", true, true},
      {"/coordinator.v1.ContextService/CreateContext", false, true},
      {"/coordinator.v1.ContextService/RecordCommand", false, true},
      {"/coordinator.v1.ConversationService/AppendMessage", false, true},
      {"/coordinator.v1.ConversationService/GetConversation", true, true},
      {"/coordinator.v1.TaskStateService/RecordFailure", false, true},
      // Cleanup and import: an admin or the task's owner (the store checks which).
      {"/coordinator.v1.TaskStateService/CleanupTask", false, true},
      {"/coordinator.v1.TaskStateService/ImportTask", false, true},
      {"/coordinator.v1.BreakerService/Cleanup", false, true},
      {"/coordinator.v1.WorkService/ImportTaskGraph", false, false},
      {"/coordinator.v1.WorkService/Retry", false, false},
      {"/coordinator.v1.BreakerService/ReadBreakerLog", true, true},
      {"/coordinator.v1.WorkService/CreateRun", false, false},
      {"/coordinator.v1.WorkService/Claim", false, true},
      {"/coordinator.v1.WorkService/WatchRun", true, true},
      {"/coordinator.v1.WorkService/ListWorkers", true, true},
      {"/coordinator.v1.WorkService/ListEvents", true, true},
      {"/coordinator.v1.WorkService/StopWorker", false, true},
      {"/coordinator.v1.WorkService/AddItems", false, false},
      {"/coordinator.v1.WorkService/MergeLevel", false, false},
      {"/coordinator.v1.WorkService/ImportRun", false, false},
      {"/coordinator.v1.AgentRegistry/RegisterAgent", false, true},
      {"/coordinator.v1.AgentRegistry/ListAgents", true, true},
      {"/lf.a2a.v1.A2AService/SendMessage", false, true},
      {"/lf.a2a.v1.A2AService/GetTask", true, true},
      // Not in the table: admin only (deny by default).
      {"/coordinator.v1.AdminService/Backup", false, false},
      {"/coordinator.v1.ContextService/NewMethodNobodyListed", false, false},
      {"", false, false},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(Call(*a, c.method, admin).ok()) << c.method;
    absl::StatusOr<Caller> as_reader = Call(*a, c.method, reader);
    absl::StatusOr<Caller> as_agent = Call(*a, c.method, agent);
    EXPECT_EQ(as_reader.ok(), c.reader_ok) << c.method << " " << as_reader.status();
    EXPECT_EQ(as_agent.ok(), c.agent_ok) << c.method << " " << as_agent.status();
    if (!c.reader_ok) {
      EXPECT_EQ(as_reader.status().code(), absl::StatusCode::kPermissionDenied) << c.method;
    }
    if (!c.agent_ok) {
      EXPECT_EQ(as_agent.status().code(), absl::StatusCode::kPermissionDenied) << c.method;
    }
    // No token is UNAUTHENTICATED everywhere, never PERMISSION_DENIED.
    EXPECT_EQ(Call(*a, c.method, "").status().code(), absl::StatusCode::kUnauthenticated)
        << c.method;
  }
}

Caller Agent(const std::string& name) {
  Caller c;
  c.authenticated = true;
  c.principal = name;
  c.role = Role::kAgent;
  return c;
}

v1::TaskContext JudgeContext() {
  v1::TaskContext context;
  context.set_context_id("eval-1");
  context.set_agent("green");
  context.add_parties("purple");
  return context;
}

// Changing a context and writing its conversation: context_store_test.cc (the stores check them).
TEST(OwnershipTest, OwnerAndPartiesOfAContext) {
  const v1::TaskContext context = JudgeContext();
  Caller reader;
  reader.authenticated = true;
  reader.principal = "dash";
  reader.role = Role::kReader;
  const Caller off;  // authentication off

  EXPECT_OK(CheckContextRead(Agent("green"), context));
  EXPECT_OK(CheckContextRead(Agent("purple"), context));
  EXPECT_OK(CheckContextRead(reader, context));
  EXPECT_OK(CheckContextRead(off, context));
  EXPECT_EQ(CheckContextRead(Agent("mallory"), context).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(OwnershipTest, NewContextsUpdatesListsAndAgentNames) {
  v1::TaskContext mine;
  mine.set_context_id("c");
  ASSERT_OK(CheckNewContext(Agent("green"), &mine));
  EXPECT_EQ(mine.agent(), "green");
  v1::TaskContext theirs;
  theirs.set_context_id("c");
  theirs.set_agent("purple");
  EXPECT_EQ(CheckNewContext(Agent("green"), &theirs).code(), absl::StatusCode::kPermissionDenied);
  v1::TaskContext many;
  for (int i = 0; i <= kMaxParties; ++i) many.add_parties(absl::StrCat("p", i));
  EXPECT_EQ(CheckNewContext(Caller{}, &many).code(), absl::StatusCode::kResourceExhausted);
  v1::TaskContext twice;
  twice.add_parties("a");
  twice.add_parties("a");
  EXPECT_EQ(CheckNewContext(Caller{}, &twice).code(), absl::StatusCode::kInvalidArgument);
  v1::TaskContext bad;
  bad.add_parties("");
  EXPECT_EQ(CheckNewContext(Caller{}, &bad).code(), absl::StatusCode::kInvalidArgument);

  v1::UpdateContextRequest update;
  update.mutable_context()->set_context_id("c");
  update.mutable_context()->set_agent("green");
  EXPECT_OK(CheckContextUpdate(Agent("green"), update));
  update.mutable_context()->set_agent("purple");
  EXPECT_EQ(CheckContextUpdate(Agent("green"), update).code(), absl::StatusCode::kPermissionDenied);
  update.mutable_update_mask()->add_paths("labels");
  EXPECT_OK(CheckContextUpdate(Agent("green"), update));  // agent is not in the mask

  std::string filter;
  ASSERT_OK(CheckContextList(Agent("green"), &filter));
  EXPECT_EQ(filter, "green");
  filter = "purple";
  EXPECT_EQ(CheckContextList(Agent("green"), &filter).code(), absl::StatusCode::kPermissionDenied);
  filter = "purple";
  EXPECT_OK(CheckContextList(Caller{}, &filter));

  EXPECT_OK(CheckAgentName(Agent("green"), "green"));
  EXPECT_EQ(CheckAgentName(Agent("green"), "purple").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_OK(CheckAgentName(Caller{}, "purple"));
}

TEST(OwnershipTest, AccessOfScopesAgentsOnly) {
  auto caller = [](Role role) {
    Caller c;
    c.authenticated = true;
    c.principal = "p";
    c.role = role;
    return c;
  };
  EXPECT_TRUE(AccessOf(caller(Role::kAgent)).scoped);
  EXPECT_FALSE(AccessOf(caller(Role::kAdmin)).scoped);
  EXPECT_FALSE(AccessOf(caller(Role::kReader)).scoped);
  EXPECT_EQ(AccessOf(caller(Role::kAgent)).principal, "p");
  // Without authentication: unscoped, and nothing created gets an owner.
  EXPECT_FALSE(AccessOf(Caller()).scoped);
  EXPECT_EQ(AccessOf(Caller()).principal, "");
  // A record without an owner belongs to no agent, not even one with an empty principal.
  EXPECT_FALSE(Access::Agent("").Owns(""));
  EXPECT_FALSE(Access::Agent("green").Owns(""));
  EXPECT_TRUE(Access::Agent("green").Owns("green"));
  EXPECT_TRUE(Access::Admin("ops").Owns(""));
}

}  // namespace
}  // namespace coordinator
