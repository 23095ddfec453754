// AgentContacts: what counts as the agent having answered, what a call records, and how probes
// are bounded and cached. The gateway's own calls and a real probe of a live and a dead agent are
// tested end to end in tests/console_process_test.cc and the browser test.
#include "coordinator/a2a/agent_contacts.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "a2a_protocol/errors.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

v1::Agent Named(const std::string& name) {
  v1::Agent agent;
  agent.set_name(name);
  agent.set_endpoint("127.0.0.1:1");
  return agent;
}

// The names on_change was called with, and a way to wait for one.
class Changes {
 public:
  std::function<void(const std::string&)> Hook() {
    return [this](const std::string& name) {
      absl::MutexLock lock(&mu_);
      names_.push_back(name);
    };
  }
  // Waits until `name` was announced `n` times in all.
  void WaitFor(const std::string& name, int n) {
    absl::MutexLock lock(&mu_);
    auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return std::count(names_.begin(), names_.end(), name) >= n;
    };
    mu_.Await(absl::Condition(&seen));
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return names_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

TEST(AgentContactsTest, AnsweredMeansTheAgentItselfReplied) {
  EXPECT_TRUE(AgentContacts::Answered(absl::OkStatus()));
  // The agent's own A2A errors: it is there.
  EXPECT_TRUE(AgentContacts::Answered(a2a_protocol::TaskNotFound("no such task")));
  EXPECT_TRUE(AgentContacts::Answered(absl::UnimplementedError("no GetTask")));
  EXPECT_TRUE(AgentContacts::Answered(absl::InvalidArgumentError("bad id")));
  // No answer.
  EXPECT_FALSE(AgentContacts::Answered(absl::UnavailableError("connection refused")));
  EXPECT_FALSE(AgentContacts::Answered(absl::DeadlineExceededError("no answer in 5s")));
  EXPECT_FALSE(AgentContacts::Answered(absl::CancelledError("stopping")));
  // Something answered, but not as an A2A agent.
  EXPECT_FALSE(
      AgentContacts::Answered(a2a_protocol::InvalidAgentResponse("the body is not JSON-RPC")));
}

TEST(AgentContactsTest, ACallRecordsItsOutcomeAndWhenTheAgentWasLastSeen) {
  AgentContacts contacts(
      [](const v1::Agent&, absl::Time) { return AgentContacts::OutcomeOf(absl::OkStatus()); });
  Changes changes;
  contacts.set_on_change(changes.Hook());
  EXPECT_EQ(contacts.Get("echo").last_call, absl::InfinitePast());

  const absl::Time before = absl::Now();
  contacts.RecordCall("echo", "delivery", absl::OkStatus());
  AgentContact seen = contacts.Get("echo");
  EXPECT_TRUE(seen.reached);
  EXPECT_EQ(seen.via, "delivery");
  EXPECT_GE(seen.last_seen, before);
  EXPECT_EQ(seen.last_call, seen.last_seen);
  EXPECT_EQ(changes.size(), 1u);  // its first call

  contacts.RecordCall("echo", "delivery", absl::OkStatus());
  EXPECT_EQ(changes.size(), 1u);  // nothing a reader shows changed
  seen = contacts.Get("echo");

  contacts.RecordCall("echo", "delivery", absl::UnavailableError("connection refused"));
  AgentContact lost = contacts.Get("echo");
  EXPECT_FALSE(lost.reached);
  EXPECT_EQ(lost.error, "connection refused");
  EXPECT_EQ(lost.last_seen, seen.last_seen);  // when it last answered stays
  EXPECT_GT(lost.last_call, seen.last_call);
  EXPECT_EQ(changes.size(), 2u);  // reached turned into not reached
}

TEST(AgentContactsTest, AProbeRecordsWhatTheAgentAnswered) {
  AgentContacts contacts([](const v1::Agent& agent, absl::Time) {
    if (agent.name() == "alive") {
      return AgentContacts::OutcomeOf(a2a_protocol::TaskNotFound("no task of that id"));
    }
    if (agent.name() == "dead") {
      return AgentContacts::OutcomeOf(absl::UnavailableError("connection refused"));
    }
    return AgentContacts::Outcome{false, "host not allowed"};  // no call made
  });
  Changes changes;
  contacts.set_on_change(changes.Hook());
  for (const char* name : {"alive", "dead", "refused"}) contacts.ProbeIfStale(Named(name));
  for (const char* name : {"alive", "dead", "refused"}) changes.WaitFor(name, 1);

  AgentContact alive = contacts.Get("alive");
  EXPECT_TRUE(alive.reached);
  EXPECT_EQ(alive.via, "probe");
  EXPECT_NE(alive.last_seen, absl::InfinitePast());
  EXPECT_FALSE(alive.probing);
  AgentContact dead = contacts.Get("dead");
  EXPECT_FALSE(dead.reached);
  EXPECT_EQ(dead.error, "connection refused");
  EXPECT_EQ(dead.last_seen, absl::InfinitePast());
  AgentContact refused = contacts.Get("refused");
  EXPECT_FALSE(refused.reached);
  EXPECT_EQ(refused.error, "host not allowed");
}

// One probe per agent at a time; none while the last word is fresh (the cache); at most
// max_probes_in_flight in all.
TEST(AgentContactsTest, ProbesAreBoundedAndCached) {
  absl::Notification release;
  std::atomic<int> calls{0};
  AgentContactsOptions options;
  options.probe_interval = absl::Hours(1);
  options.max_probes_in_flight = 2;
  options.probe_threads = 2;
  AgentContacts contacts(
      [&](const v1::Agent&, absl::Time) {
        ++calls;
        release.WaitForNotification();
        return AgentContacts::OutcomeOf(absl::OkStatus());
      },
      options);
  Changes changes;
  contacts.set_on_change(changes.Hook());
  contacts.ProbeIfStale(Named("a"));
  contacts.ProbeIfStale(Named("a"));  // already probing
  EXPECT_TRUE(contacts.Get("a").probing);
  contacts.ProbeIfStale(Named("b"));
  contacts.ProbeIfStale(Named("c"));  // two are out already
  EXPECT_FALSE(contacts.Get("c").probing);
  release.Notify();
  changes.WaitFor("a", 1);
  changes.WaitFor("b", 1);
  EXPECT_EQ(calls.load(), 2);
  // Fresh answers: no new probe of a or b within the interval; c's turn has come.
  contacts.ProbeIfStale(Named("a"));
  contacts.ProbeIfStale(Named("b"));
  EXPECT_FALSE(contacts.Get("a").probing);
  contacts.ProbeIfStale(Named("c"));
  changes.WaitFor("c", 1);
  EXPECT_EQ(calls.load(), 3);
  // A call the gateway made counts as fresh word too.
  contacts.RecordCall("d", "delivery", absl::OkStatus());
  contacts.ProbeIfStale(Named("d"));
  EXPECT_FALSE(contacts.Get("d").probing);
}

// The answer to ProbeIfStale is what was known when the probe was asked for, however quickly
// the probe ends: a reader shows "unknown, probing" and learns the outcome as a change (the
// console's overview read the contact after queuing the probe and could see its outcome).
TEST(AgentContactsTest, ProbeIfStaleAnswersWhatWasKnownBeforeTheProbe) {
  AgentContacts contacts([](const v1::Agent&, absl::Time) {
    return AgentContacts::OutcomeOf(absl::UnavailableError("connection refused"));
  });
  Changes changes;
  contacts.set_on_change(changes.Hook());
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("agent-", i);
    const AgentContact before = contacts.ProbeIfStale(Named(name));
    EXPECT_TRUE(before.probing) << name;
    EXPECT_EQ(before.last_call, absl::InfinitePast()) << name;
    changes.WaitFor(name, 1);
    const AgentContact after = contacts.Get(name);
    EXPECT_FALSE(after.probing) << name;
    EXPECT_EQ(after.via, "probe") << name;
    EXPECT_FALSE(after.reached) << name;
    // Fresh word now: asking again changes nothing and says what the probe found.
    const AgentContact again = contacts.ProbeIfStale(Named(name));
    EXPECT_FALSE(again.probing) << name;
    EXPECT_EQ(again.error, "connection refused") << name;
  }
}

TEST(AgentContactsTest, StopRefusesNewProbes) {
  std::atomic<int> calls{0};
  AgentContacts contacts([&](const v1::Agent&, absl::Time) {
    ++calls;
    return AgentContacts::OutcomeOf(absl::OkStatus());
  });
  contacts.Stop();
  contacts.ProbeIfStale(Named("a"));
  EXPECT_FALSE(contacts.Get("a").probing);
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace coordinator
