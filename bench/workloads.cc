#include "bench/workloads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <utility>

#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"

namespace bench {
namespace {

namespace v1 = ::coordinator::v1;
namespace a2apb = ::lf::a2a::v1;

using Done = std::function<void(grpc::Status)>;

// One in-flight call: owns its context and messages until the callback ran. `check` may turn a
// transport-level success into a failure (an A2A task that did not complete).
template <typename Request, typename Response>
struct Call {
  grpc::ClientContext context;
  Request request;
  Response response;
};

template <typename Response>
grpc::Status AcceptAll(const Response&) {
  return grpc::Status::OK;
}

// Issues one unary call through `start(context, request, response, callback)` with a 30 s
// deadline and `metadata`, and reports its status (after `check`) to `done`.
template <typename Request, typename Response, typename Start, typename Check>
void Issue(Request request, Start start, Check check, Done done,
           const std::pair<std::string, std::string>* metadata = nullptr) {
  auto* call = new Call<Request, Response>();
  call->request = std::move(request);
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (metadata != nullptr) call->context.AddMetadata(metadata->first, metadata->second);
  start(&call->context, &call->request, &call->response,
        [call, check, done = std::move(done)](grpc::Status s) {
          if (s.ok()) s = check(call->response);
          delete call;
          done(std::move(s));
        });
}

template <typename T>
T* Pick(const std::vector<std::unique_ptr<T>>& stubs, int stream) {
  return stubs[static_cast<size_t>(stream) % stubs.size()].get();
}

}  // namespace

Stubs::Stubs(const std::vector<std::shared_ptr<grpc::Channel>>& channels) {
  for (const auto& c : channels) {
    contexts.push_back(v1::ContextService::NewStub(c));
    conversations.push_back(v1::ConversationService::NewStub(c));
    tasks.push_back(v1::TaskStateService::NewStub(c));
    a2a.push_back(a2apb::A2AService::NewStub(c));
  }
}

absl::Status RunCount(int64_t count, int concurrency, const IssueFn& issue) {
  if (count <= 0) return absl::OkStatus();
  concurrency = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(concurrency, count)));
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  grpc::Status first_error;  // guarded by mu
  int64_t errors = 0;        // guarded by mu
  absl::BlockingCounter streams_left(concurrency);
  std::function<void(int)> step = [&](int stream) {
    const int64_t i = next++;
    if (i >= count) {
      streams_left.DecrementCount();
      return;
    }
    issue(stream, i, [&, stream](grpc::Status s) {
      if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
        absl::MutexLock lock(&mu);
        if (errors++ == 0) first_error = s;
      }
      step(stream);
    });
  };
  for (int s = 0; s < concurrency; ++s) step(s);
  streams_left.Wait();
  absl::MutexLock lock(&mu);
  if (errors > 0) {
    return absl::InternalError(absl::StrCat(
        errors, " of ", count, " set-up calls failed; first: ", first_error.error_code(), ": ",
        first_error.error_message()));
  }
  return absl::OkStatus();
}

std::string BenchContextId(const std::string& prefix, int64_t i) {
  return absl::StrCat(prefix, "-ctx-", i);
}

absl::StatusOr<std::vector<std::string>> InitTasks(Stubs& stubs, const std::string& prefix,
                                                   int64_t n) {
  std::vector<std::string> ids(static_cast<size_t>(n));
  IssueFn init = [&](int stream, int64_t seq, Done done) {
    v1::InitTaskRequest request;
    request.set_description(
        absl::StrCat(prefix, " task ", seq, ": make the flaky integration test pass"));
    auto* stub = Pick(stubs.tasks, stream);
    Issue<v1::InitTaskRequest, v1::InitTaskResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->InitTask(ctx, req, resp, std::move(cb));
        },
        [&ids, seq](const v1::InitTaskResponse& r) {
          ids[static_cast<size_t>(seq)] = r.task_id();  // each seq writes its own slot
          return grpc::Status::OK;
        },
        std::move(done));
  };
  if (absl::Status s = RunCount(n, 16, init); !s.ok()) return s;
  return ids;
}

IssueFn RecordFailureWorkload(Stubs& stubs, std::vector<std::string> task_ids) {
  auto ids = std::make_shared<const std::vector<std::string>>(std::move(task_ids));
  return [&stubs, ids](int stream, int64_t seq, Done done) {
    const uint64_t n = ids->size();
    const uint64_t index =
        (static_cast<uint64_t>(stream) + static_cast<uint64_t>(kDistinctStride) * seq) % n;
    v1::RecordFailureRequest request;
    request.set_task_id((*ids)[index]);
    request.set_error(absl::StrCat("tests/integration_test.py::test_retry FAILED (attempt ", seq,
                                   "): AssertionError: expected 200, got 503"));
    auto* stub = Pick(stubs.tasks, stream);
    Issue<v1::RecordFailureRequest, v1::RecordFailureResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->RecordFailure(ctx, req, resp, std::move(cb));
        },
        AcceptAll<v1::RecordFailureResponse>, std::move(done));
  };
}

IssueFn IncrementAttemptWorkload(Stubs& stubs, std::string task_id) {
  return [&stubs, task_id](int stream, int64_t, Done done) {
    v1::IncrementAttemptRequest request;
    request.set_task_id(task_id);
    auto* stub = Pick(stubs.tasks, stream);
    Issue<v1::IncrementAttemptRequest, v1::IncrementAttemptResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->IncrementAttempt(ctx, req, resp, std::move(cb));
        },
        AcceptAll<v1::IncrementAttemptResponse>, std::move(done));
  };
}

IssueFn AppendMessageWorkload(Stubs& stubs, std::string context_id) {
  return [&stubs, context_id](int stream, int64_t, Done done) {
    v1::AppendMessageRequest request;
    request.set_context_id(context_id);
    request.set_role(v1::ROLE_AGENT);
    request.set_text("execute: grep -rn memcpy src/ | head -20");
    request.set_tokens(17);
    auto* stub = Pick(stubs.conversations, stream);
    Issue<v1::AppendMessageRequest, v1::AppendMessageResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->AppendMessage(ctx, req, resp, std::move(cb));
        },
        AcceptAll<v1::AppendMessageResponse>, std::move(done));
  };
}

IssueFn CreateContextWorkload(Stubs& stubs, std::string prefix) {
  return [&stubs, prefix](int stream, int64_t seq, Done done) {
    v1::CreateContextRequest request;
    auto* c = request.mutable_context();
    c->set_context_id(BenchContextId(prefix, seq));
    c->set_agent("green");
    c->set_workspace_dir(absl::StrCat("/ws/", c->context_id()));
    auto* stub = Pick(stubs.contexts, stream);
    Issue<v1::CreateContextRequest, v1::TaskContext>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->CreateContext(ctx, req, resp, std::move(cb));
        },
        AcceptAll<v1::TaskContext>, std::move(done));
  };
}

IssueFn GetContextWorkload(Stubs& stubs, std::string prefix, int64_t n) {
  return [&stubs, prefix, n](int stream, int64_t, Done done) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    v1::GetContextRequest request;
    request.set_context_id(BenchContextId(prefix, static_cast<int64_t>(rng() % n)));
    auto* stub = Pick(stubs.contexts, stream);
    Issue<v1::GetContextRequest, v1::TaskContext>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->GetContext(ctx, req, resp, std::move(cb));
        },
        AcceptAll<v1::TaskContext>, std::move(done));
  };
}

IssueFn SendMessageWorkload(Stubs& stubs, std::string tenant) {
  static const std::pair<std::string, std::string> kVersion{a2a_protocol::kVersionHeader,
                                                            a2a_protocol::kVersion};
  auto counter = std::make_shared<std::atomic<int64_t>>(0);
  const std::string run = absl::StrCat(std::random_device{}());
  return [&stubs, tenant, counter, run](int stream, int64_t, Done done) {
    a2apb::SendMessageRequest request;
    request.set_tenant(tenant);
    a2apb::Message* m = request.mutable_message();
    m->set_message_id(absl::StrCat("bench-", run, "-", (*counter)++));
    m->set_role(a2apb::ROLE_USER);
    m->add_parts()->set_text("hello");
    auto* stub = Pick(stubs.a2a, stream);
    Issue<a2apb::SendMessageRequest, a2apb::SendMessageResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->SendMessage(ctx, req, resp, std::move(cb));
        },
        [](const a2apb::SendMessageResponse& r) {
          if (r.has_task() && r.task().status().state() == a2apb::TASK_STATE_COMPLETED) {
            return grpc::Status::OK;
          }
          return grpc::Status(grpc::StatusCode::UNKNOWN,
                              absl::StrCat("the answer is not a completed task: ",
                                           r.ShortDebugString().substr(0, 200)));
        },
        std::move(done), &kVersion);
  };
}

}  // namespace bench
