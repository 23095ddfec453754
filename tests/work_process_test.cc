// Work coordination with real processes: a worker killed with kill -9 loses its item to another
// worker and cannot complete it late; the whole state survives kill -9 of the coordinator; and
// five workers finish a forty-task graph while workers and the coordinator are killed at
// random. Every wait is a bounded poll; no assertion depends on how long anything took.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::coordinator::v1::WorkItem;
using ::coordinator::v1::WorkService;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing_util::CoordinatorProcess;
using ::testing_util::kProcessWait;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;

// Generous bound for anything that should happen "soon": a lease period plus a reaper period
// is well under a second here, but the machine may be busy.

// The value of "key":"..." in a line of JSON printed by coordctl.
std::string JsonString(absl::string_view json, absl::string_view key) {
  const std::string needle = absl::StrCat("\"", key, "\":\"");
  const size_t start = json.find(needle);
  if (start == absl::string_view::npos) return "";
  const size_t from = start + needle.size();
  return std::string(json.substr(from, json.find('"', from) - from));
}

// A progress line on stderr, so a slow run shows where the time went.
void Note(absl::string_view what) {
  std::fprintf(stderr, "%s %s\n",
               absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()).c_str(),
               std::string(what).c_str());
}

std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = absl::Seconds(5)) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  return context;
}

std::vector<WorkItem> AllItems(WorkService::Stub& stub, const std::string& run_id) {
  coordinator::v1::ListItemsRequest request;
  request.set_run_id(run_id);
  request.set_page_size(1000);
  coordinator::v1::ListItemsResponse response;
  grpc::Status s = stub.ListItems(Context().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return {response.items().begin(), response.items().end()};
}

TEST(WorkProcessTest, KilledWorkersItemGoesToAnotherWorkerAndItsLateCompleteIsRefused) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), {"--reaper_period=200ms"});
  ASSERT_OK(coordinator);
  const std::string target = (*coordinator)->target();

  std::filesystem::create_directory(dir.Sub("specs"));
  std::ofstream(dir.Sub("specs/01-auth.md")) << "# Auth service\n";
  absl::StatusOr<ProcessResult> created =
      RunCoordctl(target, {"run", "create", "--workstreams", dir.Sub("specs")});
  ASSERT_OK(created);
  ASSERT_EQ(created->exit_code, 0) << created->Describe();
  const std::string run_id(absl::StripAsciiWhitespace(created->out));

  absl::StatusOr<std::unique_ptr<Process>> watcher = Process::Start(
      testing_util::BinaryPath("coordctl"), {"--target", target, "run", "watch", run_id});
  ASSERT_OK(watcher);
  // Wait for the end of its snapshot, so that what follows reaches it as changes.
  for (const absl::Time end = absl::Now() + kProcessWait;
       !absl::StrContains((*watcher)->stdout_text(), "-- ") && absl::Now() < end;) {
    ASSERT_FALSE((*watcher)->ended()) << (*watcher)->stderr_text();
    absl::SleepFor(absl::Milliseconds(20));
  }

  // Worker A takes the item and is killed while its command runs.
  absl::StatusOr<std::unique_ptr<Process>> worker_a = Process::Start(
      testing_util::BinaryPath("coordctl"), {"--target", target, "run", "work", run_id, "--worker",
                                             "A", "--ttl", "1s", "--", "sleep", "600"});
  ASSERT_OK(worker_a);
  absl::StatusOr<std::string> claimed = (*worker_a)->WaitForStderrLine(" claimed ", kProcessWait);
  ASSERT_OK(claimed);
  const std::string lease_a(claimed->substr(claimed->rfind(' ') + 1));
  ASSERT_OK((*worker_a)->Kill());

  // Worker B gets it once A's lease expired and the reaper took it back.
  std::string claim_b;
  const absl::Time deadline = absl::Now() + kProcessWait;
  while (absl::Now() < deadline) {
    absl::StatusOr<ProcessResult> claim =
        RunCoordctl(target, {"run", "claim", run_id, "--worker", "B", "--ttl", "60s"});
    ASSERT_OK(claim);
    if (claim->exit_code == 0) {
      claim_b = claim->out;
      break;
    }
    ASSERT_EQ(claim->exit_code, 1) << claim->Describe();  // nothing claimable yet
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_FALSE(claim_b.empty()) << "worker B never got the item";
  EXPECT_EQ(JsonString(claim_b, "workerId"), "B");
  EXPECT_EQ(JsonString(claim_b, "epoch"), "2");
  EXPECT_THAT(claim_b, HasSubstr("lease of worker A expired"));
  const std::string lease_b = JsonString(claim_b, "lease");

  // A's late completion is refused; B's goes through.
  absl::StatusOr<ProcessResult> late = RunCoordctl(target, {"run", "complete", lease_a});
  ASSERT_OK(late);
  EXPECT_EQ(late->exit_code, 3) << late->Describe();
  EXPECT_THAT(late->err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(late->err, HasSubstr("stale"));
  absl::StatusOr<ProcessResult> done =
      RunCoordctl(target, {"run", "complete", lease_b, "--summary", "finished by B"});
  ASSERT_OK(done);
  EXPECT_EQ(done->exit_code, 0) << done->Describe();

  absl::StatusOr<ProcessResult> status = RunCoordctl(target, {"run", "status", run_id});
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("completed"));
  EXPECT_THAT(status->out, HasSubstr("finished by B"));

  // The watcher saw the changes as they happened.
  bool seen = false;
  for (const absl::Time end = absl::Now() + kProcessWait; !seen && absl::Now() < end;) {
    seen = absl::StrContains((*watcher)->stdout_text(), "changed 01-auth done worker=B");
    if (!seen) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(seen) << (*watcher)->stdout_text();
  EXPECT_THAT((*watcher)->stdout_text(), HasSubstr("changed 01-auth running worker=A"));
  ASSERT_OK((*watcher)->Kill());
}

TEST(WorkProcessTest, StateSurvivesKillOfTheCoordinator) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(coordinator);
  std::ofstream(dir.Sub("graph.json")) << R"({"feature": "restart", "tasks": [
      {"id": "T1", "level": 1, "files": {"create": ["a"]}},
      {"id": "T2", "level": 1, "files": {"create": ["b"]}, "owner": "me"},
      {"id": "T3", "level": 2, "dependencies": ["T1", "T2"]}]})";
  absl::StatusOr<ProcessResult> imported = RunCoordctl(
      (*coordinator)->target(), {"run", "import", dir.Sub("graph.json"), "--run-id", "R"});
  ASSERT_OK(imported);
  ASSERT_EQ(imported->exit_code, 0) << imported->Describe();

  auto stub = WorkService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));
  coordinator::v1::ClaimRequest claim;
  claim.set_run_id("R");
  claim.set_worker_id("w1");
  claim.mutable_lease_ttl()->set_seconds(3600);
  coordinator::v1::ClaimResponse first;
  ASSERT_TRUE(stub->Claim(Context().get(), claim, &first).ok());
  coordinator::v1::ClaimResponse second;
  ASSERT_TRUE(stub->Claim(Context().get(), claim, &second).ok());
  coordinator::v1::CompleteRequest complete;
  complete.set_lease(first.lease());
  WorkItem item;
  ASSERT_TRUE(stub->Complete(Context().get(), complete, &item).ok());
  coordinator::v1::HeartbeatRequest beat;
  beat.set_lease(second.lease());
  beat.set_progress("step 2 of 3");
  coordinator::v1::HeartbeatResponse beat_response;
  ASSERT_TRUE(stub->Heartbeat(Context().get(), beat, &beat_response).ok());
  const std::vector<WorkItem> before = AllItems(*stub, "R");

  ASSERT_OK((*coordinator)->Kill());
  coordinator = CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(coordinator);
  stub = WorkService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));

  const std::vector<WorkItem> after = AllItems(*stub, "R");
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].SerializeAsString(), before[i].SerializeAsString())
        << "item " << before[i].item_id() << " changed across the restart:\n"
        << before[i].DebugString() << "\nvs\n"
        << after[i].DebugString();
  }
  coordinator::v1::GetRunRequest get;
  get.set_run_id("R");
  coordinator::v1::Run run;
  ASSERT_TRUE(stub->GetRun(Context().get(), get, &run).ok());
  EXPECT_EQ(run.counts().done(), 1);
  EXPECT_EQ(run.counts().running(), 1);
  EXPECT_EQ(run.status(), coordinator::v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(run.metadata().fields_size(), 0);

  // The surviving lease still works, the stale one is still refused, and the run goes on.
  ASSERT_TRUE(stub->Heartbeat(Context().get(), beat, &beat_response).ok());
  complete.set_lease(second.lease());
  ASSERT_TRUE(stub->Complete(Context().get(), complete, &item).ok());
  coordinator::v1::ClaimResponse third;
  ASSERT_TRUE(stub->Claim(Context().get(), claim, &third).ok());
  EXPECT_EQ(third.item().item_id(), "T3");
}

// One simulated worker of the chaos test. It claims, "works", heartbeats, and then completes,
// fails (retryable) or crashes (abandons its lease without a word), at random. It records every
// completion the coordinator acknowledged, with the lease's epoch.
class ChaosWorker {
 public:
  ChaosWorker(std::string name, std::string run_id, std::string target, uint32_t seed)
      : name_(std::move(name)),
        run_id_(std::move(run_id)),
        target_(std::move(target)),
        random_(seed) {
    Connect();
  }

  // Runs until the run needs nothing more from workers, or `deadline`.
  void Run(absl::Time deadline, const std::atomic<bool>* stop, absl::Mutex* mu,
           std::map<std::string, std::set<int64_t>>* done, std::atomic<int>* completions) {
    while (absl::Now() < deadline && !stop->load()) {
      coordinator::v1::ClaimRequest claim;
      claim.set_run_id(run_id_);
      claim.set_worker_id(name_);
      claim.mutable_lease_ttl()->set_nanos(800'000'000);
      coordinator::v1::ClaimResponse claimed;
      grpc::Status s = stub_->Claim(Context().get(), claim, &claimed);
      if (!s.ok()) {  // the coordinator is down or restarting
        absl::SleepFor(absl::Milliseconds(50));
        if (s.error_code() == grpc::StatusCode::UNAVAILABLE) Connect();
        continue;
      }
      if (!claimed.has_item()) {
        if (claimed.stalled()) return;
        absl::SleepFor(absl::Milliseconds(20));
        continue;
      }
      const int roll = std::uniform_int_distribution<int>(0, 99)(random_);
      absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(10, 60)(random_)));
      coordinator::v1::HeartbeatRequest beat;
      beat.set_lease(claimed.lease());
      beat.set_progress(absl::StrCat("halfway by ", name_));
      coordinator::v1::HeartbeatResponse beat_response;
      (void)stub_->Heartbeat(Context().get(), beat, &beat_response);
      if (roll < 10) {
        // Crash: the lease is abandoned; the worker "restarts" after a moment.
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
      const absl::Time give_up = absl::Now() + absl::Seconds(5);
      if (roll < 20) {
        coordinator::v1::FailRequest fail;
        fail.set_lease(claimed.lease());
        fail.set_error(absl::StrCat("flaky failure on ", name_));
        fail.set_retryable(true);
        WorkItem item;
        while (absl::Now() < give_up && Transient(stub_->Fail(Context().get(), fail, &item))) {
          absl::SleepFor(absl::Milliseconds(50));
          Connect();
        }
        continue;
      }
      coordinator::v1::CompleteRequest complete;
      complete.set_lease(claimed.lease());
      complete.set_summary(absl::StrCat("done by ", name_));
      WorkItem item;
      while (absl::Now() < give_up) {
        s = stub_->Complete(Context().get(), complete, &item);
        if (s.ok()) {
          absl::MutexLock lock(mu);
          (*done)[claimed.item().item_id()].insert(claimed.epoch());
          completions->fetch_add(1);
          break;
        }
        if (!Transient(s)) break;  // fenced: the lease was lost while the coordinator was down
        absl::SleepFor(absl::Milliseconds(50));
        if (s.error_code() == grpc::StatusCode::UNAVAILABLE) Connect();
      }
    }
  }

 private:
  // A fresh channel connects at once, where an old one would wait out its reconnect backoff.
  void Connect() {
    stub_ = WorkService::NewStub(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
  }

  static bool Transient(const grpc::Status& s) {
    return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
           s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
           s.error_code() == grpc::StatusCode::ABORTED ||
           s.error_code() == grpc::StatusCode::CANCELLED;
  }

  const std::string name_;
  const std::string run_id_;
  const std::string target_;
  std::unique_ptr<WorkService::Stub> stub_;
  std::mt19937 random_;
};

TEST(WorkProcessTest, OnEtcdOnlyTheReaperEndsALeaseOnRocksDbItsExpiryDoes) {
  // The server picks the lease expiry from its store (docs/work.md, "When a lease expires"). A
  // reaper that passes only at start (an hour's period) shows which: past the expiry stamped at
  // the claim, the embedded store refuses the heartbeat; on etcd (observed expiry) only the
  // reaper ends a lease, so the heartbeat keeps it.
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), {"--reaper_period=1h"});
  ASSERT_OK(coordinator);
  auto stub = WorkService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));
  coordinator::v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("R");
  create.mutable_run()->set_kind(coordinator::v1::RUN_KIND_WORKSTREAMS);
  create.add_items()->set_item_id("a");
  coordinator::v1::Run run;
  grpc::Status s = stub->CreateRun(Context().get(), create, &run);
  ASSERT_TRUE(s.ok()) << s.error_message();
  coordinator::v1::ClaimRequest claim;
  claim.set_run_id("R");
  claim.set_worker_id("w1");
  claim.mutable_lease_ttl()->set_nanos(100'000'000);
  coordinator::v1::ClaimResponse claimed;
  s = stub->Claim(Context().get(), claim, &claimed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(claimed.has_item());
  // Wait (bounded) until this machine's clock, the coordinator's too, is past the stamped expiry.
  const absl::Time expire = absl::FromUnixSeconds(claimed.lease_expire_time().seconds()) +
                            absl::Nanoseconds(claimed.lease_expire_time().nanos());
  const absl::Time deadline = absl::Now() + kProcessWait;
  while (absl::Now() <= expire + absl::Milliseconds(1) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  coordinator::v1::HeartbeatRequest beat;
  beat.set_lease(claimed.lease());
  coordinator::v1::HeartbeatResponse beat_response;
  s = stub->Heartbeat(Context().get(), beat, &beat_response);
  if (storage::testing::UseEtcd()) {
    EXPECT_TRUE(s.ok()) << s.error_message();
    coordinator::v1::CompleteRequest complete;
    complete.set_lease(claimed.lease());
    WorkItem item;
    s = stub->Complete(Context().get(), complete, &item);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(item.status(), coordinator::v1::ITEM_STATUS_DONE);
  } else {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(s.error_message(), HasSubstr("expired"));
  }
}

TEST(WorkProcessTest, FortyTasksFiveWorkersWithKillsEndDoneExactlyOnceOrBlocked) {
  TempDir dir;
  const std::vector<std::string> coordinator_flags = {"--reaper_period=100ms"};
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), coordinator_flags);
  ASSERT_OK(coordinator);
  const int port = (*coordinator)->port();
  const std::string target = (*coordinator)->target();

  // Four levels of ten tasks; each depends on two tasks of the level below, and every third on
  // the task before it in its own level.
  std::string graph = R"({"feature": "chaos", "tasks": [)";
  constexpr int kLevels = 4;
  constexpr int kPerLevel = 10;
  for (int level = 0; level < kLevels; ++level) {
    for (int i = 0; i < kPerLevel; ++i) {
      std::vector<std::string> deps;
      if (level > 0) {
        deps.push_back(absl::StrFormat("\"T%d-%02d\"", level - 1, i));
        deps.push_back(absl::StrFormat("\"T%d-%02d\"", level - 1, (i + 3) % kPerLevel));
      }
      if (i % 3 == 2) deps.push_back(absl::StrFormat("\"T%d-%02d\"", level, i - 1));
      absl::StrAppendFormat(
          &graph,
          R"(%s{"id": "T%d-%02d", "title": "task", "level": %d, "dependencies": [%s],)"
          R"( "files": {"create": ["src/%d/%d.cc"]}})",
          level + i == 0 ? "" : ",", level, i, level, absl::StrJoin(deps, ","), level, i);
    }
  }
  graph += "]}";
  std::ofstream(dir.Sub("graph.json")) << graph;
  absl::StatusOr<ProcessResult> imported = RunCoordctl(
      target, {"run", "import", dir.Sub("graph.json"), "--run-id", "chaos", "--max-attempts", "25",
               "--backoff-base", "20ms", "--backoff-max", "100ms"});
  ASSERT_OK(imported);
  ASSERT_EQ(imported->exit_code, 0) << imported->Describe();

  absl::Mutex mu;
  std::map<std::string, std::set<int64_t>> done;  // item -> epochs of acknowledged Completes
  std::atomic<int> completions{0};
  const absl::Time deadline = absl::Now() + absl::Seconds(90);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  // Whatever happens below, the threads are stopped and joined before the test returns.
  struct Joiner {
    std::atomic<bool>* stop;
    std::vector<std::thread>* threads;
    ~Joiner() {
      stop->store(true);
      for (std::thread& t : *threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{&stop, &threads};

  // Three of the five workers are threads that crash (abandon their lease) at random.
  constexpr int kThreadWorkers = 3;
  std::atomic<int> threads_running{kThreadWorkers};
  for (int w = 0; w < kThreadWorkers; ++w) {
    threads.emplace_back([&, w] {
      ChaosWorker worker(absl::StrCat("worker-", w), "chaos", target, 1000 + w);
      worker.Run(deadline, &stop, &mu, &done, &completions);
      threads_running.fetch_sub(1);
    });
  }
  // Two are `coordctl run work` processes, killed with kill -9 at random and started again.
  // Their command logs which lease ran it.
  const std::string exec_log = dir.Sub("exec.log");
  auto start_process_worker = [&](const std::string& name) {
    return Process::Start(
        testing_util::BinaryPath("coordctl"),
        {"--target", target, "run", "work", "chaos", "--worker", name, "--ttl", "800ms", "--poll",
         "50ms", "--patience", "60s", "--", "sh", "-c",
         absl::StrCat("echo \"$COORD_ITEM_ID $COORD_EPOCH\" >> ", exec_log, "; sleep 0.05")});
  };
  std::vector<std::unique_ptr<Process>> process_workers;
  for (int p = 0; p < 2; ++p) {
    absl::StatusOr<std::unique_ptr<Process>> process =
        start_process_worker(absl::StrCat("proc-", p, "-0"));
    ASSERT_OK(process);
    process_workers.push_back(*std::move(process));
  }
  std::atomic<int> process_kills{0};
  threads.emplace_back([&] {
    std::mt19937 random(7);
    for (int generation = 1; !stop.load() && absl::Now() < deadline; ++generation) {
      absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(150, 500)(random)));
      const int p = std::uniform_int_distribution<int>(0, 1)(random);
      if (process_workers[p]->ended()) continue;  // it finished: nothing left to claim
      (void)process_workers[p]->Kill();
      process_kills.fetch_add(1);
      absl::StatusOr<std::unique_ptr<Process>> process =
          start_process_worker(absl::StrCat("proc-", p, "-", generation));
      if (process.ok()) process_workers[p] = *std::move(process);
    }
  });

  // Kill the coordinator three times while the graph is being worked on, at points set by
  // progress rather than by time, and bring it back on the same port.
  for (int threshold : {4, 9, 14}) {
    while (completions.load() < threshold && threads_running.load() > 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    Note(absl::StrCat("killing the coordinator after ", completions.load(),
                      " completions by thread workers"));
    ASSERT_OK((*coordinator)->Kill());
    absl::SleepFor(absl::Milliseconds(300));  // leases expire while it is down
    std::vector<std::string> flags = coordinator_flags;
    flags.push_back(absl::StrCat("--listen=127.0.0.1:", port));
    for (int attempt = 0; attempt < 50; ++attempt) {
      coordinator = CoordinatorProcess::Start(dir.Sub("data"), flags);
      if (coordinator.ok()) break;
      absl::SleepFor(absl::Milliseconds(100));  // the port may still be held for a moment
    }
    ASSERT_OK(coordinator);
    ASSERT_EQ((*coordinator)->port(), port);
    Note("coordinator restarted");
  }
  while (threads_running.load() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_LT(absl::Now(), deadline) << "the workers did not finish the graph in time";
  stop.store(true);
  for (std::thread& t : threads) t.join();
  for (std::unique_ptr<Process>& process : process_workers) {
    // A process worker stops by itself once nothing is left to claim.
    absl::StatusOr<ProcessResult> ended = process->Wait(kProcessWait);
    ASSERT_OK(ended);
  }
  Note(absl::StrCat("workers finished; ", process_kills.load(), " worker processes killed"));

  auto stub = WorkService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  const std::vector<WorkItem> items = AllItems(*stub, "chaos");
  ASSERT_EQ(items.size(), static_cast<size_t>(kLevels * kPerLevel));
  std::set<std::string> executions;
  {
    std::ifstream log(exec_log);
    for (std::string line; std::getline(log, line);) executions.insert(line);
  }
  int done_items = 0;
  int blocked_items = 0;
  int by_threads = 0;
  for (const WorkItem& item : items) {
    if (item.status() == coordinator::v1::ITEM_STATUS_BLOCKED) ++blocked_items;
  }
  for (const WorkItem& item : items) {
    const std::set<int64_t>& epochs = done[item.item_id()];
    switch (item.status()) {
      case coordinator::v1::ITEM_STATUS_DONE:
        ++done_items;
        // Done exactly once: one completion, by the lease of the final epoch. A thread worker
        // recorded each completion it got acknowledged; a process worker's command logged the
        // lease that ran it.
        if (absl::StartsWith(item.worker_id(), "worker-")) {
          ++by_threads;
          EXPECT_EQ(epochs.size(), 1u) << item.item_id() << " completed under several leases";
          EXPECT_EQ(epochs.count(item.epoch()), 1u) << item.item_id();
        } else {
          EXPECT_TRUE(epochs.empty()) << item.item_id() << " completed under several leases";
          EXPECT_THAT(executions, Contains(absl::StrCat(item.item_id(), " ", item.epoch())))
              << item.item_id() << " was completed by a lease that did not run it";
        }
        break;
      case coordinator::v1::ITEM_STATUS_BLOCKED:
        EXPECT_FALSE(item.status_reason().empty()) << item.item_id();
        EXPECT_TRUE(epochs.empty()) << item.item_id() << " is blocked but was completed";
        break;
      case coordinator::v1::ITEM_STATUS_PENDING:
        // Only an item stuck behind a blocked one may still wait.
        EXPECT_GT(blocked_items, 0) << item.item_id() << " was left pending";
        EXPECT_TRUE(epochs.empty()) << item.item_id();
        break;
      default:
        ADD_FAILURE() << item.item_id() << " ended " << item.DebugString();
    }
  }
  Note(absl::StrCat(done_items, " done (", by_threads, " by thread workers, ",
                    done_items - by_threads, " by worker processes), ", blocked_items, " blocked"));
  coordinator::v1::GetRunRequest get;
  get.set_run_id("chaos");
  coordinator::v1::Run run;
  ASSERT_TRUE(stub->GetRun(Context().get(), get, &run).ok());
  EXPECT_EQ(run.counts().done(), done_items);
  EXPECT_EQ(run.counts().blocked(), blocked_items);
  EXPECT_EQ(run.counts().running() + run.counts().failed(), 0);
  if (blocked_items == 0) {
    EXPECT_EQ(run.status(), coordinator::v1::RUN_STATUS_COMPLETED);
  }
  // Later levels were claimed only after earlier ones: the claim counts say the kills and
  // crashes really cost attempts, and the run still ended.
  EXPECT_GT(run.claim_count(), static_cast<int64_t>(items.size()));
}

}  // namespace
