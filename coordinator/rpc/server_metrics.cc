#include "coordinator/rpc/server_metrics.h"

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/metrics.h"

namespace coordinator {
namespace {

using grpc::experimental::InterceptionHookPoints;

// gRPC 1.51 has no public name for a status code; its codes are Abseil's, which has one.
std::string CodeName(grpc::StatusCode code) {
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN" : name;
}

struct CallFamilies {
  common::CounterFamily* requests;
  common::HistogramFamily* latency;
  common::GaugeFamily* open_streams;
};

const CallFamilies& Calls() {
  static const CallFamilies families = [] {
    common::MetricsRegistry& registry = common::MetricsRegistry::Default();
    return CallFamilies{
        registry.AddCounter("coordinator_grpc_requests_total",
                            "gRPC calls finished, by service, method and status code.",
                            {"service", "method", "code"}),
        registry.AddHistogram("coordinator_grpc_request_duration_seconds",
                              "Time from a call's start to its status, by service and method.",
                              {"service", "method"}, common::LatencyBuckets()),
        registry.AddGauge("coordinator_grpc_open_streams",
                          "Streaming calls open now (A2A streams and subscriptions, run "
                          "watches), by service and method.",
                          {"service", "method"}),
    };
  }();
  return families;
}

// The metric children of one method, found once per method: a family's WithLabels builds label
// vectors and takes the family's lock, about ten allocations and two shared locks per call, which
// a call must not pay (bench/analysis.md, allocation counts).
struct MethodMetrics {
  std::string service;
  std::string method;
  common::Histogram* latency = nullptr;
  common::Gauge* open_streams = nullptr;  // streaming methods only
  // By status code (0-16; others count as UNKNOWN), made on the first call that ends with it.
  std::array<std::atomic<common::Counter*>, 17> requests{};

  common::Counter* Requests(grpc::StatusCode code) {
    const size_t i = code >= 0 && static_cast<size_t>(code) < requests.size()
                         ? static_cast<size_t>(code)
                         : static_cast<size_t>(grpc::StatusCode::UNKNOWN);
    common::Counter* counter = requests[i].load(std::memory_order_acquire);
    if (counter == nullptr) {
      // Two calls may both look it up: WithLabels gives both the same child.
      counter = Calls().requests->WithLabels(
          {service, method, CodeName(static_cast<grpc::StatusCode>(i))});
      requests[i].store(counter, std::memory_order_release);
    }
    return counter;
  }
};

// The MethodMetrics of "/package.Service/Method", made on its first call. Lives as long as the
// process, as the families' children do.
MethodMetrics& ForMethod(absl::string_view full, bool streaming) {
  static absl::Mutex mu;
  static auto* by_method = new absl::flat_hash_map<std::string, std::unique_ptr<MethodMetrics>>();
  {
    absl::ReaderMutexLock lock(&mu);
    auto it = by_method->find(full);
    if (it != by_method->end()) return *it->second;
  }
  absl::MutexLock lock(&mu);
  std::unique_ptr<MethodMetrics>& slot = (*by_method)[full];
  if (slot == nullptr) {
    auto metrics = std::make_unique<MethodMetrics>();
    absl::string_view name = full;
    if (!name.empty() && name[0] == '/') name.remove_prefix(1);
    const size_t slash = name.find('/');
    metrics->service = std::string(name.substr(0, slash));
    metrics->method = slash == absl::string_view::npos ? "" : std::string(name.substr(slash + 1));
    metrics->latency = Calls().latency->WithLabels({metrics->service, metrics->method});
    // As before the cache: a unary method has no open-streams series.
    if (streaming) {
      metrics->open_streams = Calls().open_streams->WithLabels({metrics->service, metrics->method});
    }
    slot = std::move(metrics);
  }
  return *slot;
}

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MetricsInterceptor(grpc::experimental::ServerRpcInfo* info)
      : start_(absl::Now()),
        metrics_(ForMethod(info->method() != nullptr ? info->method() : "",
                           info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY)) {
    stream_ = metrics_.open_streams;  // set for streaming methods only
    if (stream_ != nullptr) stream_->Add(1);
  }

  ~MetricsInterceptor() override {
    if (stream_ != nullptr) stream_->Add(-1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (!counted_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      counted_ = true;
      metrics_.Requests(methods->GetSendStatus().error_code())->Increment();
      metrics_.latency->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  const absl::Time start_;
  MethodMetrics& metrics_;
  common::Gauge* stream_ = nullptr;
  bool counted_ = false;
};

}  // namespace

grpc::experimental::Interceptor* MetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new MetricsInterceptor(info);
}

ServerMetrics::ServerMetrics(storage::Store* store, WorkStore* work,
                             std::function<bool()> runs_background_jobs) {
  common::MetricsRegistry& registry = common::MetricsRegistry::Default();
  using common::CallbackSample;
  using common::MetricType;
  // One Stats() per figure keeps each callback independent; Stats() reads in-memory
  // properties, so a scrape stays cheap.
  auto stat = [store](uint64_t storage::StoreStats::*field) {
    return [store, field] {
      return std::vector<CallbackSample>{{{}, static_cast<double>(store->Stats().*field)}};
    };
  };
  callbacks_.push_back(registry.AddCallback(MetricType::kGauge,
                                            "coordinator_rocksdb_live_data_bytes",
                                            "RocksDB's estimate of the live data size, in bytes "
                                            "(rocksdb.estimate-live-data-size).",
                                            {}, stat(&storage::StoreStats::live_data_bytes)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kGauge, "coordinator_rocksdb_compactions_pending",
      "Column families with a compaction pending (rocksdb.compaction-pending).", {},
      stat(&storage::StoreStats::compactions_pending)));
  callbacks_.push_back(
      registry.AddCallback(MetricType::kGauge, "coordinator_rocksdb_delayed_write_rate_bytes",
                           "Rate writes are slowed to, bytes per second; 0 when they are not "
                           "(rocksdb.actual-delayed-write-rate).",
                           {}, stat(&storage::StoreStats::delayed_write_rate)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kGauge, "coordinator_rocksdb_write_stopped",
      "1 while writes are stopped by a stall (rocksdb.is-write-stopped).", {}, [store] {
        return std::vector<CallbackSample>{{{}, store->Stats().write_stopped ? 1.0 : 0.0}};
      }));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kCounter, "coordinator_rocksdb_write_stalls_total",
      "Write stalls since the database opened, by kind: stop or slowdown.", {"kind"}, [store] {
        const storage::StoreStats stats = store->Stats();
        return std::vector<CallbackSample>{
            {{"stop"}, static_cast<double>(stats.stall_stops)},
            {{"slowdown"}, static_cast<double>(stats.stall_slowdowns)}};
      }));
  callbacks_.push_back(registry.AddCallback(MetricType::kCounter, "coordinator_etcd_commits_total",
                                            "Transactions' commits sent to etcd (0 on RocksDB).",
                                            {}, stat(&storage::StoreStats::commits)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kCounter, "coordinator_etcd_commit_requests_total",
      "etcd Txns that carried those commits: the commits of concurrent transactions go in one "
      "(0 on RocksDB).",
      {}, stat(&storage::StoreStats::commit_requests)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kCounter, "coordinator_etcd_reads_total",
      "Reads of the latest values sent to etcd: transactions' first reads and plain gets (0 on "
      "RocksDB).",
      {}, stat(&storage::StoreStats::reads)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kCounter, "coordinator_etcd_read_requests_total",
      "etcd requests that carried those reads: concurrent reads go in one Txn (0 on RocksDB).", {},
      stat(&storage::StoreStats::read_requests)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kCounter, "coordinator_etcd_transaction_conflicts_total",
      "Transactions run again on etcd because another writer changed what they read (0 on "
      "RocksDB).",
      {}, stat(&storage::StoreStats::transaction_conflicts)));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kGauge, "coordinator_work_leases_held",
      "Work items holding a lease (expired ones the reaper has not taken back included).", {},
      [work] {
        absl::StatusOr<int64_t> count = work->CountLeases();
        return count.ok() ? std::vector<CallbackSample>{{{}, static_cast<double>(*count)}}
                          : std::vector<CallbackSample>{};
      }));
  callbacks_.push_back(registry.AddCallback(
      MetricType::kGauge, "coordinator_background_jobs_leader",
      "1 while this replica runs the background jobs (work-lease reaper, retention, A2A "
      "deliveries and webhooks): always on RocksDB, the elected replica on etcd.",
      {}, [leads = std::move(runs_background_jobs)] {
        return std::vector<CallbackSample>{{{}, leads() ? 1.0 : 0.0}};
      }));
}

ServerMetrics::~ServerMetrics() {
  for (uint64_t id : callbacks_) common::MetricsRegistry::Default().RemoveCallback(id);
}

}  // namespace coordinator
