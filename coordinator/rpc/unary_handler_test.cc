// HandleUnary over real gRPC (127.0.0.1:0) and a RocksStore whose WAL syncs the test holds and
// fails (StoreOptions::before_wal_sync): a call is answered only after the sync that covers its
// write returned; a failed sync fails exactly the calls it covered; calls waiting for the disk
// hold no thread, so a two-thread pool serves hundreds of them at once; and the calls waiting
// for the disk count against --max_queued_calls.
#include "coordinator/rpc/unary_handler.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/rpc/task_state_service.h"
#include "coordinator/store/retry/task_state_store.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;

// Holds WAL syncs while closed; fails the next sync when told to.
class SyncGate {
 public:
  std::function<absl::Status()> Hook() {
    return [this] {
      absl::MutexLock lock(&mu_);
      ++started_;
      started_cv_.SignalAll();
      mu_.Await(absl::Condition(
          +[](bool* closed) { return !*closed; }, &closed_));
      absl::Status result = std::move(next_);
      next_ = absl::OkStatus();
      return result;
    };
  }
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    closed_ = false;
  }
  void FailNext(absl::Status status) {
    absl::MutexLock lock(&mu_);
    next_ = std::move(status);
  }
  // Waits until `n` syncs have started in all.
  void WaitForStarted(int n) {
    absl::MutexLock lock(&mu_);
    while (started_ < n) started_cv_.Wait(&mu_);
  }
  int started() {
    absl::MutexLock lock(&mu_);
    return started_;
  }

 private:
  absl::Mutex mu_;
  absl::CondVar started_cv_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status next_ ABSL_GUARDED_BY(mu_);
};

// The answers of asynchronous calls, as they come.
class Answers {
 public:
  std::function<void(grpc::Status)> Callback(int i) {
    return [this, i](grpc::Status status) {
      absl::MutexLock lock(&mu_);
      statuses_[i] = std::move(status);
      answered_[i] = true;
      ++count_;
      cv_.SignalAll();
    };
  }
  void Resize(int n) {
    absl::MutexLock lock(&mu_);
    statuses_.resize(n);
    answered_.resize(n, false);
  }
  int count() {
    absl::MutexLock lock(&mu_);
    return count_;
  }
  bool answered(int i) {
    absl::MutexLock lock(&mu_);
    return answered_[i];
  }
  void WaitFor(int n) {
    absl::MutexLock lock(&mu_);
    while (count_ < n) cv_.Wait(&mu_);
  }
  grpc::Status status(int i) {
    absl::MutexLock lock(&mu_);
    return statuses_[i];
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<grpc::Status> statuses_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> answered_ ABSL_GUARDED_BY(mu_);
};

int ThreadsOfThisProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

class UnaryHandlerTest : public ::testing::Test {
 protected:
  void Start(int64_t max_waiting) {
    storage::StoreOptions options;
    options.path = dir_.Sub("db");
    options.before_wal_sync = gate_.Hook();
    absl::StatusOr<std::unique_ptr<storage::RocksStore>> store =
        storage::RocksStore::Open(std::move(options));
    ASSERT_OK(store);
    store_ = *std::move(store);
    pool_ = std::make_unique<common::ThreadPool>(2, max_waiting);
    calls_ = std::make_unique<CallRunner>(pool_.get(), store_.get(), max_waiting);
    tasks_ = std::make_unique<TaskStateStore>(store_.get(), TaskStateOptions());
    service_ = std::make_unique<TaskStateServiceImpl>(tasks_.get(), calls_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::TaskStateService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    gate_.Open();
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    pool_.reset();
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return context;
  }

  std::string InitTask(const std::string& description) {
    v1::InitTaskRequest request;
    request.set_description(description);
    v1::InitTaskResponse response;
    grpc::Status s = stub_->InitTask(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task_id();
  }

  // Sends RecordFailure to `task_id` without waiting for the answer; answer `i` of `answers`.
  void SendFailure(const std::string& task_id, int i, Answers* answers) {
    auto& call = calls_in_flight_.emplace_back(std::make_unique<Call>());
    call->request.set_task_id(task_id);
    call->request.set_error(absl::StrCat("error ", i));
    stub_->async()->RecordFailure(call->context.get(), &call->request, &call->response,
                                  answers->Callback(i));
  }

  // Waits until `n` calls wait for the disk (each has run its transaction).
  void WaitForDurabilityWaiters(int64_t n) {
    while (store_->DurabilityWaiters() < n) absl::SleepFor(absl::Milliseconds(1));
  }

  struct Call {
    std::unique_ptr<grpc::ClientContext> context = Context();
    v1::RecordFailureRequest request;
    v1::RecordFailureResponse response;
  };

  testing_util::TempDir dir_;
  SyncGate gate_;
  std::unique_ptr<storage::RocksStore> store_;
  std::unique_ptr<common::ThreadPool> pool_;
  std::unique_ptr<CallRunner> calls_;
  std::unique_ptr<TaskStateStore> tasks_;
  std::unique_ptr<TaskStateServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::TaskStateService::Stub> stub_;
  std::vector<std::unique_ptr<Call>> calls_in_flight_;
};

TEST_F(UnaryHandlerTest, ACallIsAnsweredOnlyAfterTheSyncThatCoversItsWrite) {
  ASSERT_NO_FATAL_FAILURE(Start(common::ThreadPool::kUnbounded));
  const std::string task = InitTask("answered after its sync");
  gate_.Close();
  Answers answers;
  answers.Resize(1);
  const int syncs_before = gate_.started();
  SendFailure(task, 0, &answers);
  gate_.WaitForStarted(syncs_before + 1);
  WaitForDurabilityWaiters(1);
  // The transaction has committed and the call waits for its sync, which is under way but held:
  // no answer, however long the sync takes.
  EXPECT_FALSE(answers.answered(0));
  gate_.Open();
  answers.WaitFor(1);
  EXPECT_TRUE(answers.status(0).ok()) << answers.status(0).error_message();
  EXPECT_EQ(calls_in_flight_[0]->response.failure().seq(), 1);
}

TEST_F(UnaryHandlerTest, AFailedSyncFailsExactlyTheCallsItCovered) {
  ASSERT_NO_FATAL_FAILURE(Start(common::ThreadPool::kUnbounded));
  constexpr int kLater = 10;
  std::vector<std::string> tasks;
  for (int i = 0; i <= kLater; ++i) tasks.push_back(InitTask(absl::StrCat("task ", i)));
  gate_.Close();
  gate_.FailNext(absl::UnavailableError("injected: fdatasync failed"));
  Answers answers;
  answers.Resize(kLater + 1);
  // Call 0 is written before the (failing) sync starts, so that sync covers it.
  const int syncs_before = gate_.started();
  SendFailure(tasks[0], 0, &answers);
  gate_.WaitForStarted(syncs_before + 1);
  // The others are written while it runs: the next sync, which succeeds, covers them.
  for (int i = 1; i <= kLater; ++i) SendFailure(tasks[i], i, &answers);
  WaitForDurabilityWaiters(kLater + 1);
  EXPECT_EQ(answers.count(), 0);
  gate_.Open();
  answers.WaitFor(kLater + 1);
  EXPECT_EQ(answers.status(0).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(answers.status(0).error_message(), HasSubstr("injected"));
  for (int i = 1; i <= kLater; ++i) {
    EXPECT_TRUE(answers.status(i).ok()) << i << ": " << answers.status(i).error_message();
  }
}

TEST_F(UnaryHandlerTest, CallsWaitingForTheDiskHoldNoThread) {
  ASSERT_NO_FATAL_FAILURE(Start(common::ThreadPool::kUnbounded));
  constexpr int kWrites = 200;  // RecordFailure: a short call, on gRPC's threads
  constexpr int kReads = 50;    // GetTaskState: scans histories, on the two-thread pool
  const std::string task = InitTask("many at once");
  const int threads_before = ThreadsOfThisProcess();
  gate_.Close();
  Answers answers;
  answers.Resize(kWrites);
  const int syncs_before = gate_.started();
  SendFailure(task, 0, &answers);
  gate_.WaitForStarted(syncs_before + 1);
  for (int i = 1; i < kWrites; ++i) SendFailure(task, i, &answers);
  std::vector<std::unique_ptr<grpc::ClientContext>> read_contexts;
  std::vector<v1::GetTaskStateRequest> read_requests(kReads);
  std::vector<v1::TaskState> read_responses(kReads);
  Answers reads;
  reads.Resize(kReads);
  for (int i = 0; i < kReads; ++i) {
    read_contexts.push_back(Context());
    read_requests[i].set_task_id(task);
    stub_->async()->GetTaskState(read_contexts.back().get(), &read_requests[i], &read_responses[i],
                                 reads.Callback(i));
  }
  // Every call has done its work and waits for the one held sync, at once: none of them is
  // queued for a thread or holds one.
  WaitForDurabilityWaiters(kWrites + kReads);
  EXPECT_EQ(answers.count() + reads.count(), 0);
  EXPECT_EQ(pool_->queued(), 0);
  EXPECT_LT(ThreadsOfThisProcess() - threads_before, 20);
  gate_.Open();
  answers.WaitFor(kWrites);
  reads.WaitFor(kReads);
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_TRUE(answers.status(i).ok()) << i << ": " << answers.status(i).error_message();
  }
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(reads.status(i).ok()) << i << ": " << reads.status(i).error_message();
  }
  // Concurrent appends to one task lose nothing.
  v1::GetTaskStateRequest request;
  request.set_task_id(task);
  v1::TaskState state;
  ASSERT_TRUE(stub_->GetTaskState(Context().get(), request, &state).ok());
  EXPECT_EQ(state.failures_size(), kWrites);
}

TEST_F(UnaryHandlerTest, CallsWaitingForTheDiskCountAgainstTheBound) {
  constexpr int kBound = 5;
  ASSERT_NO_FATAL_FAILURE(Start(kBound));
  std::vector<std::string> tasks;
  for (int i = 0; i <= kBound; ++i) tasks.push_back(InitTask(absl::StrCat("bounded ", i)));
  gate_.Close();
  Answers answers;
  answers.Resize(kBound + 1);
  for (int i = 0; i < kBound; ++i) SendFailure(tasks[i], i, &answers);
  WaitForDurabilityWaiters(kBound);
  // One more is refused at once, naming the flag, and writes nothing.
  SendFailure(tasks[kBound], kBound, &answers);
  answers.WaitFor(1);
  EXPECT_EQ(answers.status(kBound).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(answers.status(kBound).error_message(), HasSubstr("--max_queued_calls"));
  gate_.Open();
  answers.WaitFor(kBound + 1);
  for (int i = 0; i < kBound; ++i) {
    EXPECT_TRUE(answers.status(i).ok()) << i << ": " << answers.status(i).error_message();
  }
  v1::GetTaskStateRequest request;
  request.set_task_id(tasks[kBound]);
  v1::TaskState state;
  ASSERT_TRUE(stub_->GetTaskState(Context().get(), request, &state).ok());
  EXPECT_EQ(state.failures_size(), 0);
}

}  // namespace
}  // namespace coordinator
