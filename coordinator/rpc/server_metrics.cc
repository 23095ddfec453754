#include "coordinator/rpc/server_metrics.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MetricsInterceptor(grpc::experimental::ServerRpcInfo* info) : start_(absl::Now()) {
    // "/package.Service/Method"
    absl::string_view full = info->method() != nullptr ? info->method() : "";
    if (!full.empty() && full[0] == '/') full.remove_prefix(1);
    const size_t slash = full.find('/');
    service_ = std::string(full.substr(0, slash));
    method_ = slash == absl::string_view::npos ? "" : std::string(full.substr(slash + 1));
    if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) {
      stream_ = Calls().open_streams->WithLabels({service_, method_});
      stream_->Add(1);
    }
  }

  ~MetricsInterceptor() override {
    if (stream_ != nullptr) stream_->Add(-1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (!counted_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      counted_ = true;
      const grpc::Status status = methods->GetSendStatus();
      Calls().requests->WithLabels({service_, method_, CodeName(status.error_code())})->Increment();
      Calls()
          .latency->WithLabels({service_, method_})
          ->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  const absl::Time start_;
  std::string service_;
  std::string method_;
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
