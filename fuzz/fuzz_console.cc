// libFuzzer harness for the web console's JSON endpoints (coordinator/console/console.cc) on a
// real coordinator's HTTP port, without authentication: every input is a request below
// /console/api/, its path (ids of evaluations and runs), query string (filters, limits, the
// change feed's ?after= cursor) and method from the input. An evaluation "eval-1" and a run
// "run-1" are created at start so that ids that exist come up too. A finding: an answer with
// INTERNAL, UNKNOWN or DATA_LOSS, or a crash (fuzz_http.h).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "fuzz/fuzz_http.h"
#include "fuzz/fuzz_server.h"
#include "grpcpp/grpcpp.h"

namespace {

void CheckOk(const char* what, const grpc::Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "cannot create %s: %s\n", what, status.error_message().c_str());
  std::abort();
}

std::unique_ptr<grpc::ClientContext> Deadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

// What the console shows: one evaluation (a context with the green agent's labels) and one run.
void CreateRecords() {
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", fuzzing::GrpcPort()), grpc::InsecureChannelCredentials());
  coordinator::v1::CreateContextRequest context_request;
  coordinator::v1::TaskContext* context = context_request.mutable_context();
  context->set_context_id("eval-1");
  context->set_agent("fuzz-agent");
  (*context->mutable_labels())["purple_agent"] = "p1";
  (*context->mutable_labels())["score"] = "0.5";
  coordinator::v1::TaskContext created;
  CheckOk("eval-1", coordinator::v1::ContextService::NewStub(channel)->CreateContext(
                        Deadline().get(), context_request, &created));
  coordinator::v1::CreateRunRequest run_request;
  run_request.mutable_run()->set_run_id("run-1");
  run_request.mutable_run()->set_kind(coordinator::v1::RUN_KIND_WORKSTREAMS);
  coordinator::v1::WorkItem* item = run_request.add_items();
  item->set_item_id("i1");
  item->set_title("first");
  coordinator::v1::Run run;
  CheckOk("run-1", coordinator::v1::WorkService::NewStub(channel)->CreateRun(Deadline().get(),
                                                                             run_request, &run));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzzing::EnableHttpPort();
  CreateRecords();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzzing::FuzzHttpRequest("/console/api/", data, size);
}
