// WorkService over real gRPC (127.0.0.1:0): the unary calls map statuses, and WatchRun sends a
// snapshot, then every change, and ends a watcher that falls behind without slowing writers.
#include "coordinator/rpc/work_service.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/store/records/time_util.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;

class WorkServiceTest : public ::testing::Test {
 protected:
  void Start(size_t max_watch_queue) {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"));
    ASSERT_OK(store);
    store_ = *std::move(store);
    pool_ = std::make_unique<common::ThreadPool>(8);
    calls_ =
        std::make_unique<CallRunner>(pool_.get(), store_.get(), common::ThreadPool::kUnbounded);
    work_ = std::make_unique<WorkStore>(store_.get(), &notifier_, WorkLimits());
    service_ =
        std::make_unique<WorkServiceImpl>(work_.get(), &notifier_, calls_.get(), max_watch_queue);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    target_ = absl::StrCat("127.0.0.1:", port);
    stub_ =
        v1::WorkService::NewStub(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    notifier_.Close(absl::UnavailableError("test over"));
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    pool_.reset();
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  void CreateRun(const std::string& run_id, int items) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(run_id);
    request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    for (int i = 0; i < items; ++i) request.add_items()->set_item_id(absl::StrCat("ws-", i));
    v1::Run run;
    grpc::Status s = stub_->CreateRun(Context().get(), request, &run);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  v1::ClaimResponse Claim(const std::string& run_id, const std::string& worker) {
    v1::ClaimRequest request;
    request.set_run_id(run_id);
    request.set_worker_id(worker);
    v1::ClaimResponse response;
    grpc::Status s = stub_->Claim(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  testing_util::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<common::ThreadPool> pool_;
  std::unique_ptr<CallRunner> calls_;
  WorkNotifier notifier_;
  std::unique_ptr<WorkStore> work_;
  std::unique_ptr<WorkServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string target_;
  std::unique_ptr<v1::WorkService::Stub> stub_;
};

TEST_F(WorkServiceTest, WatchSendsTheSnapshotThenEveryChange) {
  Start(WorkServiceImpl::kDefaultWatchQueue);
  CreateRun("r", 2);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::WatchRunRequest request;
  request.set_run_id("r");
  auto reader = stub_->WatchRun(&context, request);
  v1::RunEvent event;
  std::vector<std::string> snapshot;
  while (reader->Read(&event) && event.type() == v1::RunEvent::TYPE_SNAPSHOT) {
    snapshot.push_back(event.item().item_id());
  }
  EXPECT_EQ(snapshot, (std::vector<std::string>{"ws-0", "ws-1"}));
  ASSERT_EQ(event.type(), v1::RunEvent::TYPE_SNAPSHOT_END);
  EXPECT_EQ(event.run().status(), v1::RUN_STATUS_PLANNING);

  v1::ClaimResponse claimed = Claim("r", "w1");
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.type(), v1::RunEvent::TYPE_CHANGED);
  EXPECT_EQ(event.item().item_id(), claimed.item().item_id());
  EXPECT_EQ(event.item().status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(event.run().status(), v1::RUN_STATUS_RUNNING);

  v1::CompleteRequest complete;
  complete.set_lease(claimed.lease());
  v1::WorkItem done;
  ASSERT_TRUE(stub_->Complete(Context().get(), complete, &done).ok());
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.item().status(), v1::ITEM_STATUS_DONE);

  context.TryCancel();
  while (reader->Read(&event)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(WorkServiceTest, WatchOfAnUnknownRunIsNotFound) {
  Start(WorkServiceImpl::kDefaultWatchQueue);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::WatchRunRequest request;
  request.set_run_id("nope");
  auto reader = stub_->WatchRun(&context, request);
  v1::RunEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(WorkServiceTest, ASlowWatcherIsEndedWithoutBlockingWriters) {
  Start(/*max_watch_queue=*/4);
  CreateRun("r", 1);
  // A watcher on its own connection whose receive window stays small (no BDP probing), so a
  // watcher that stops reading soon stops taking data.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  auto slow_stub = v1::WorkService::NewStub(
      grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::WatchRunRequest request;
  request.set_run_id("r");
  auto reader = slow_stub->WatchRun(&context, request);
  v1::RunEvent event;
  ASSERT_TRUE(reader->Read(&event));  // the stream is live
  v1::ClaimResponse claimed = Claim("r", "w1");

  // The watcher reads nothing more while large changes pile up: the transport's window fills,
  // the queue overflows, and every heartbeat still goes through.
  const std::string progress(60 << 10, 'p');
  for (int i = 0; i < 200; ++i) {
    v1::HeartbeatRequest beat;
    beat.set_lease(claimed.lease());
    beat.set_progress(absl::StrCat(i, progress));
    v1::HeartbeatResponse response;
    grpc::Status s = stub_->Heartbeat(Context().get(), beat, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  while (reader->Read(&event)) {
  }
  grpc::Status end = reader->Finish();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(end.error_message(), HasSubstr("watch the run again"));
}

TEST_F(WorkServiceTest, StaleLeaseIsFailedPrecondition) {
  Start(WorkServiceImpl::kDefaultWatchQueue);
  CreateRun("r", 1);
  v1::ClaimResponse claimed = Claim("r", "w1");
  v1::FailRequest fail;
  fail.set_lease(claimed.lease());
  fail.set_error("oops");
  fail.set_retryable(false);
  v1::WorkItem item;
  ASSERT_TRUE(stub_->Fail(Context().get(), fail, &item).ok());
  v1::CompleteRequest complete;
  complete.set_lease(claimed.lease());
  EXPECT_EQ(stub_->Complete(Context().get(), complete, &item).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  complete.set_lease("garbage!");
  EXPECT_EQ(stub_->Complete(Context().get(), complete, &item).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// The work-model RPCs over gRPC: each answers, and maps its refusals to the codes clients act
// on (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS).
TEST_F(WorkServiceTest, WorkModelCallsAndTheirRefusals) {
  Start(WorkServiceImpl::kDefaultWatchQueue);
  CreateRun("r", 2);

  // AddItems, and what it refuses.
  v1::AddItemsRequest add;
  add.set_run_id("r");
  v1::WorkItem* item = add.add_items();
  item->set_item_id("gpu");
  item->add_required_capabilities("gpu");
  v1::AddItemsResponse added;
  ASSERT_TRUE(stub_->AddItems(Context().get(), add, &added).ok());
  EXPECT_EQ(added.run().counts().total(), 3);
  EXPECT_EQ(stub_->AddItems(Context().get(), add, &added).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  item->set_item_id("loop");
  item->add_dependencies("loop");
  EXPECT_EQ(stub_->AddItems(Context().get(), add, &added).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  item->clear_dependencies();
  item->set_description(std::string(65 << 10, 'd'));
  EXPECT_EQ(stub_->AddItems(Context().get(), add, &added).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  add.set_run_id("missing");
  EXPECT_EQ(stub_->AddItems(Context().get(), add, &added).error_code(),
            grpc::StatusCode::NOT_FOUND);

  // Claims with capabilities; the registry and the log see them.
  v1::ClaimRequest claim;
  claim.set_run_id("r");
  claim.set_worker_id("w1");
  claim.add_capabilities("gpu");
  claim.set_pid(77);
  v1::ClaimResponse claimed;
  ASSERT_TRUE(stub_->Claim(Context().get(), claim, &claimed).ok());
  EXPECT_EQ(claimed.item().item_id(), "gpu");
  EXPECT_EQ(claimed.item().pid(), 77);
  claim.add_capabilities(std::string(1000, 'c'));
  EXPECT_EQ(stub_->Claim(Context().get(), claim, &claimed).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListWorkersRequest workers;
  workers.set_run_id("r");
  v1::ListWorkersResponse listed;
  ASSERT_TRUE(stub_->ListWorkers(Context().get(), workers, &listed).ok());
  ASSERT_EQ(listed.workers_size(), 1);
  EXPECT_EQ(listed.workers(0).status(), v1::WORKER_STATUS_BUSY);
  workers.set_page_token("not-a-token");
  EXPECT_EQ(stub_->ListWorkers(Context().get(), workers, &listed).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::StopWorkerRequest stop;
  stop.set_run_id("r");
  stop.set_worker_id("w1");
  v1::RunWorker stopped;
  EXPECT_EQ(stub_->StopWorker(Context().get(), stop, &stopped).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  stop.set_worker_id(std::string(300, 'w'));
  EXPECT_EQ(stub_->StopWorker(Context().get(), stop, &stopped).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::MergeLevelRequest merge;
  merge.set_run_id("r");
  merge.set_level(0);
  v1::Run run;
  EXPECT_EQ(stub_->MergeLevel(Context().get(), merge, &run).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  merge.set_level(-4);
  EXPECT_EQ(stub_->MergeLevel(Context().get(), merge, &run).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::ListEventsRequest events;
  events.set_run_id("r");
  v1::ListEventsResponse log;
  ASSERT_TRUE(stub_->ListEvents(Context().get(), events, &log).ok());
  ASSERT_FALSE(log.events().empty());
  EXPECT_EQ(log.events(0).kind(), v1::WorkEvent::KIND_RUN_CREATED);
  EXPECT_EQ(log.last_seq(), log.events(log.events_size() - 1).seq());
  events.set_after_seq(-1);
  EXPECT_EQ(stub_->ListEvents(Context().get(), events, &log).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::ListItemsRequest items;
  items.set_run_id("r");
  items.set_status(v1::ITEM_STATUS_RUNNING);
  v1::ListItemsResponse running;
  ASSERT_TRUE(stub_->ListItems(Context().get(), items, &running).ok());
  ASSERT_EQ(running.items_size(), 1);
  EXPECT_EQ(running.items(0).item_id(), "gpu");
}

}  // namespace
}  // namespace coordinator
