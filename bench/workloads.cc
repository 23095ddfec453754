#include "bench/workloads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "a2a_protocol/json_binding.h"
#include "a2a_protocol/version.h"
#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "httplib.h"

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

// The W5 message: a new task for the echo agent, with an id unique to this run.
a2apb::SendMessageRequest NewSendMessage(const std::string& tenant, const std::string& run,
                                         int64_t n) {
  a2apb::SendMessageRequest request;
  request.set_tenant(tenant);
  a2apb::Message* m = request.mutable_message();
  m->set_message_id(absl::StrCat("bench-", run, "-", n));
  m->set_role(a2apb::ROLE_USER);
  m->add_parts()->set_text("hello");
  return request;
}

grpc::Status CompletedTask(const a2apb::SendMessageResponse& r) {
  if (r.has_task() && r.task().status().state() == a2apb::TASK_STATE_COMPLETED) {
    return grpc::Status::OK;
  }
  return grpc::Status(
      grpc::StatusCode::UNKNOWN,
      absl::StrCat("the answer is not a completed task: ", r.ShortDebugString().substr(0, 200)));
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
    health.push_back(grpc::health::v1::Health::NewStub(c));
    etcd_kv.push_back(etcdserverpb::KV::NewStub(c));
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

IssueFn PingWorkload(Stubs& stubs) {
  return [&stubs](int stream, int64_t, Done done) {
    auto* stub = Pick(stubs.health, stream);
    Issue<grpc::health::v1::HealthCheckRequest, grpc::health::v1::HealthCheckResponse>(
        grpc::health::v1::HealthCheckRequest(),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->Check(ctx, req, resp, std::move(cb));
        },
        [](const grpc::health::v1::HealthCheckResponse& r) {
          return r.status() == grpc::health::v1::HealthCheckResponse::SERVING
                     ? grpc::Status::OK
                     : grpc::Status(
                           grpc::StatusCode::UNAVAILABLE,
                           absl::StrCat("the server is not serving: ", r.ShortDebugString()));
        },
        std::move(done));
  };
}

absl::StatusOr<double> EtcdKvRequests(const std::vector<std::string>& members) {
  double requests = 0;
  for (const std::string& member : members) {
    httplib::Client client(absl::StrCat("http://", member));
    client.set_connection_timeout(5);
    client.set_read_timeout(5);
    httplib::Result got = client.Get("/metrics");
    if (!got || got->status != 200) {
      return absl::UnavailableError(absl::StrCat("cannot read http://", member, "/metrics"));
    }
    for (absl::string_view line : absl::StrSplit(got->body, '\n')) {
      if (!absl::StartsWith(line, "grpc_server_handled_total{") ||
          !absl::StrContains(line, "grpc_service=\"etcdserverpb.KV\"") ||
          !(absl::StrContains(line, "grpc_method=\"Range\"") ||
            absl::StrContains(line, "grpc_method=\"Txn\"") ||
            absl::StrContains(line, "grpc_method=\"Put\""))) {
        continue;
      }
      double value = 0;
      if (!absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) {
        return absl::DataLossError(absl::StrCat("unreadable metric line: ", line));
      }
      requests += value;
    }
  }
  return requests;
}

IssueFn EtcdPutWorkload(Stubs& stubs, std::string prefix, int64_t value_bytes) {
  return [&stubs, prefix = std::move(prefix), value = std::string(value_bytes, 'v')](
             int stream, int64_t seq, Done done) {
    auto* stub = Pick(stubs.etcd_kv, stream);
    etcdserverpb::PutRequest request;
    request.set_key(absl::StrCat(prefix, stream, "/", seq));
    request.set_value(value);
    Issue<etcdserverpb::PutRequest, etcdserverpb::PutResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->Put(ctx, req, resp, std::move(cb));
        },
        AcceptAll<etcdserverpb::PutResponse>, std::move(done));
  };
}

IssueFn SendMessageWorkload(Stubs& stubs, std::string tenant) {
  static const std::pair<std::string, std::string> kVersion{a2a_protocol::kVersionHeader,
                                                            a2a_protocol::kVersion};
  auto counter = std::make_shared<std::atomic<int64_t>>(0);
  const std::string run = absl::StrCat(std::random_device{}());
  return [&stubs, tenant, counter, run](int stream, int64_t, Done done) {
    auto* stub = Pick(stubs.a2a, stream);
    Issue<a2apb::SendMessageRequest, a2apb::SendMessageResponse>(
        NewSendMessage(tenant, run, (*counter)++),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->SendMessage(ctx, req, resp, std::move(cb));
        },
        CompletedTask, std::move(done), &kVersion);
  };
}

absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  auto bad = [&url](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("URL \"", url, "\": ", why));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) return bad("only http:// URLs are supported");
  HttpUrl out;
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  if (slash != absl::string_view::npos) out.path = std::string(rest.substr(slash));
  if (out.path.find_first_of("?#") != std::string::npos) return bad("no query or fragment");
  if (authority.find('@') != absl::string_view::npos) return bad("no user information");
  const size_t colon = authority.rfind(':');
  if (colon != absl::string_view::npos) {
    if (!absl::SimpleAtoi(authority.substr(colon + 1), &out.port) || out.port < 1 ||
        out.port > 65535) {
      return bad("the port is not a number from 1 to 65535");
    }
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) return bad("no host");
  if (authority.find_first_of("[]: ") != absl::string_view::npos) return bad("a malformed host");
  out.host = std::string(authority);
  return out;
}

namespace {

// The threads and HTTP clients of JsonRpcSendMessageWorkload: one of each per stream, made on
// the stream's first call. Issue() hands the call to the stream's thread; the loop generator
// issues a stream's next call from the previous one's `done`, that is from the same thread,
// so a stream never has more than one call waiting.
class JsonRpcStreams {
 public:
  explicit JsonRpcStreams(HttpUrl url) : url_(std::move(url)) {}

  ~JsonRpcStreams() {
    absl::MutexLock lock(&mu_);
    for (auto& s : streams_) {
      {
        absl::MutexLock stream_lock(&s->mu);
        s->stop = true;
      }
      s->thread.join();
    }
  }

  void Issue(int stream, Done done) {
    Stream* s = Get(stream);
    absl::MutexLock lock(&s->mu);
    s->job = std::move(done);
  }

 private:
  struct Stream {
    absl::Mutex mu;
    std::optional<Done> job ABSL_GUARDED_BY(mu);
    bool stop ABSL_GUARDED_BY(mu) = false;
    std::thread thread;
  };

  Stream* Get(int stream) {
    absl::MutexLock lock(&mu_);
    while (streams_.size() <= static_cast<size_t>(stream)) {
      auto s = std::make_unique<Stream>();
      s->thread = std::thread([this, raw = s.get()] { Loop(raw); });
      streams_.push_back(std::move(s));
    }
    return streams_[static_cast<size_t>(stream)].get();
  }

  void Loop(Stream* s) {
    httplib::Client client(url_.host, url_.port);
    client.set_keep_alive(true);
    // Headers and body go out in separate writes: without TCP_NODELAY, Nagle holds the body
    // until the server's delayed ACK (40 ms a call on Linux).
    client.set_tcp_nodelay(true);
    client.set_connection_timeout(std::chrono::seconds(10));
    client.set_read_timeout(std::chrono::seconds(30));  // the gRPC mode's deadline
    client.set_write_timeout(std::chrono::seconds(30));
    for (;;) {
      Done job;
      {
        absl::MutexLock lock(&s->mu);
        s->mu.Await(absl::Condition(
            +[](Stream* s) { return s->job.has_value() || s->stop; }, s));
        if (!s->job) return;  // stopped, nothing left to run
        job = *std::move(s->job);
        s->job.reset();
      }
      job(Call(client));
    }
  }

  grpc::Status Call(httplib::Client& client) {
    const int64_t n = counter_++;
    const std::string body =
        absl::StrCat(R"({"jsonrpc":"2.0","id":)", n, R"(,"method":"SendMessage","params":)",
                     a2a_protocol::ToJson(NewSendMessage("", run_, n)), "}");
    httplib::Headers headers = {{"A2A-Version", a2a_protocol::kVersion}};
    httplib::Result res =
        client.Post(url_.path.c_str(), headers, body, a2a_protocol::kJsonContentType);
    if (!res) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("POST ", url_.path, ": ", httplib::to_string(res.error())));
    }
    if (res->status != 200) {
      return grpc::Status(
          grpc::StatusCode::UNKNOWN,
          absl::StrCat("POST ", url_.path, ": HTTP ", res->status, ": ", res->body.substr(0, 200)));
    }
    absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(res->body);
    if (!result.ok()) {
      return grpc::Status(static_cast<grpc::StatusCode>(result.status().code()),
                          std::string(result.status().message()));
    }
    a2apb::SendMessageResponse response;
    if (absl::Status s = a2a_protocol::FromJson(*result, &response); !s.ok()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          absl::StrCat("the result is not a SendMessageResponse: ", s.message()));
    }
    return CompletedTask(response);
  }

  const HttpUrl url_;
  const std::string run_ = absl::StrCat(std::random_device{}());
  std::atomic<int64_t> counter_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

IssueFn JsonRpcSendMessageWorkload(HttpUrl url) {
  auto streams = std::make_shared<JsonRpcStreams>(std::move(url));
  return [streams](int stream, int64_t, Done done) { streams->Issue(stream, std::move(done)); };
}

}  // namespace bench
