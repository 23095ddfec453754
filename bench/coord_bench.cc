// coord_bench: drives one coordinator workload at one or more concurrencies and prints a line
// of JSON per concurrency (throughput, latency percentiles, errors). bench/run.sh starts the
// coordinators and the peers and turns these lines into bench/RESULTS.md.
//
//   coord_bench --target=127.0.0.1:50051 --workload=append --concurrency=1,16,64
//
// Workloads (the numbering of bench/RESULTS.md):
//   append  W3: append to one conversation (--history=N messages are appended first)
//   get     W4: get-context at random among --contexts=N contexts (created first, if missing)
#include <atomic>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/blocking_counter.h"
#include "bench/loadgen.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "coordinator address");
ABSL_FLAG(std::string, workload, "append", "append | get");
ABSL_FLAG(std::string, concurrency, "1,16,64", "comma-separated stream counts");
ABSL_FLAG(int, channels, 4, "gRPC channels (connections) the streams are spread over");
ABSL_FLAG(double, warmup_seconds, 1, "warm-up before each measurement");
ABSL_FLAG(double, seconds, 5, "measured time per concurrency");
ABSL_FLAG(int64_t, history, 0, "append: messages appended to the conversation before measuring");
ABSL_FLAG(int64_t, contexts, 100000, "get: contexts to read among");
ABSL_FLAG(std::string, run_id, "bench", "prefix of the ids this run creates");

namespace {

using coordinator::v1::ContextService;
using coordinator::v1::ConversationService;

struct Stubs {
  std::vector<std::unique_ptr<ContextService::Stub>> contexts;
  std::vector<std::unique_ptr<ConversationService::Stub>> conversations;
  explicit Stubs(const std::vector<std::shared_ptr<grpc::Channel>>& channels) {
    for (const auto& c : channels) {
      contexts.push_back(ContextService::NewStub(c));
      conversations.push_back(ConversationService::NewStub(c));
    }
  }
};

// One in-flight call: owns its context and messages until the callback runs.
template <typename Request, typename Response>
struct Call {
  grpc::ClientContext context;
  Request request;
  Response response;
};

template <typename Request, typename Response, typename Start>
void Issue(Request request, Start start, std::function<void(grpc::Status)> done) {
  auto* call = new Call<Request, Response>();
  call->request = std::move(request);
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  start(&call->context, &call->request, &call->response, [call, done](grpc::Status s) {
    delete call;
    done(std::move(s));
  });
}

bench::IssueFn AppendWorkload(Stubs& stubs, const std::string& context_id) {
  return [&stubs, context_id](int stream, int64_t, std::function<void(grpc::Status)> done) {
    coordinator::v1::AppendMessageRequest request;
    request.set_context_id(context_id);
    request.set_role(coordinator::v1::ROLE_AGENT);
    request.set_text("execute: grep -rn memcpy src/ | head -20");
    request.set_tokens(17);
    auto* stub = stubs.conversations[stream % stubs.conversations.size()].get();
    Issue<coordinator::v1::AppendMessageRequest, coordinator::v1::AppendMessageResponse>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->AppendMessage(ctx, req, resp, std::move(cb));
        },
        std::move(done));
  };
}

std::string ContextId(int64_t i) { return absl::StrCat(absl::GetFlag(FLAGS_run_id), "-ctx-", i); }

bench::IssueFn GetWorkload(Stubs& stubs, int64_t contexts) {
  return [&stubs, contexts](int stream, int64_t seq, std::function<void(grpc::Status)> done) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    coordinator::v1::GetContextRequest request;
    request.set_context_id(ContextId(static_cast<int64_t>(rng() % contexts)));
    (void)seq;
    auto* stub = stubs.contexts[stream % stubs.contexts.size()].get();
    Issue<coordinator::v1::GetContextRequest, coordinator::v1::TaskContext>(
        std::move(request),
        [stub](auto* ctx, auto* req, auto* resp, auto cb) {
          stub->async()->GetContext(ctx, req, resp, std::move(cb));
        },
        std::move(done));
  };
}

// Runs `issue` `count` times at concurrency 64 (set-up work, not measured). Fails loudly.
bool Preload(int64_t count, const bench::IssueFn& issue, const char* what) {
  if (count <= 0) return true;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> errors{0};
  absl::BlockingCounter streams_left(64);
  std::function<void(int)> step = [&](int stream) {
    const int64_t i = next++;
    if (i >= count) {
      streams_left.DecrementCount();
      return;
    }
    issue(stream, i, [&, stream](grpc::Status s) {
      if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS) ++errors;
      step(stream);
    });
  };
  for (int s = 0; s < 64; ++s) step(s);
  streams_left.Wait();
  if (errors > 0) {
    std::cerr << "coord_bench: " << errors << " errors while preparing " << what << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("coord_bench --target=HOST:PORT --workload=append|get");
  absl::ParseCommandLine(argc, argv);
  std::vector<int> concurrencies;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_concurrency), ',')) {
    int c = 0;
    if (!absl::SimpleAtoi(part, &c) || c <= 0) {
      std::cerr << "coord_bench: --concurrency takes positive numbers\n";
      return 2;
    }
    concurrencies.push_back(c);
  }
  auto channels = bench::MakeChannels(absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_channels));
  Stubs stubs(channels);
  const std::string workload = absl::GetFlag(FLAGS_workload);

  bench::IssueFn issue;
  std::string detail;
  if (workload == "append") {
    const std::string context_id = absl::StrCat(absl::GetFlag(FLAGS_run_id), "-convo");
    issue = AppendWorkload(stubs, context_id);
    if (!Preload(absl::GetFlag(FLAGS_history), issue, "the conversation history")) return 1;
    detail = absl::StrFormat("\"history\":%d,", absl::GetFlag(FLAGS_history));
  } else if (workload == "get") {
    const int64_t n = absl::GetFlag(FLAGS_contexts);
    auto create = [&stubs](int stream, int64_t i, std::function<void(grpc::Status)> done) {
      coordinator::v1::CreateContextRequest request;
      auto* c = request.mutable_context();
      c->set_context_id(ContextId(i));
      c->set_agent("green");
      c->set_workspace_dir(absl::StrCat("/ws/", ContextId(i)));
      auto* stub = stubs.contexts[stream % stubs.contexts.size()].get();
      Issue<coordinator::v1::CreateContextRequest, coordinator::v1::TaskContext>(
          std::move(request),
          [stub](auto* ctx, auto* req, auto* resp, auto cb) {
            stub->async()->CreateContext(ctx, req, resp, std::move(cb));
          },
          std::move(done));
    };
    if (!Preload(n, create, "the contexts")) return 1;
    issue = GetWorkload(stubs, n);
    detail = absl::StrFormat("\"contexts\":%d,", n);
  } else {
    std::cerr << "coord_bench: unknown --workload " << workload << "\n";
    return 2;
  }

  bool had_errors = false;
  for (int c : concurrencies) {
    bench::LoadOptions options;
    options.concurrency = c;
    options.warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds));
    options.duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
    bench::LoadResult r = bench::RunLoad(options, issue);
    std::cout << absl::StrFormat(
                     "{\"workload\":\"%s\",%s\"concurrency\":%d,\"calls\":%d,\"errors\":%d,"
                     "\"throughput\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f}",
                     workload, detail, c, r.calls, r.errors, r.throughput, r.p50_us, r.p99_us,
                     r.p999_us)
              << std::endl;
    if (r.errors > 0) {
      std::cerr << "coord_bench: " << r.errors << " calls failed at concurrency " << c
                << "; first: " << r.first_error << "\n";
      had_errors = true;
    }
    if (r.calls == 0) {
      std::cerr << "coord_bench: no call succeeded at concurrency " << c << "\n";
      had_errors = true;
    }
  }
  return had_errors ? 1 : 0;
}
