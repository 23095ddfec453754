// The coordinator's own metrics, served at /metrics on its HTTP port from
// common::MetricsRegistry::Default() (docs/configuration.md, "Metrics"):
//   - every gRPC call, counted by service, method and status code, and timed (a histogram),
//     and the streams open right now, by an interceptor that sees each call;
//   - figures read at scrape time: RocksDB's (storage::Store::Stats), the work leases held, and
//     whether this replica runs the background jobs (the elected one on etcd).
// Counters that domain code keeps live beside that code: A2A deliveries (a2a_gateway.cc),
// expired leases (reaper.cc), breaker trips (breaker.cc).
#ifndef COORDINATOR_RPC_SERVER_METRICS_H_
#define COORDINATOR_RPC_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "coordinator/store/work/work_store.h"
#include "grpcpp/support/server_interceptor.h"
#include "storage/store.h"

namespace coordinator {

// Counts and times every call; put it last among the interceptors so that it sees the status
// the others settled on.
class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

// Registers the scrape-time figures of one server; unregisters them when destroyed, after which
// neither `store` nor `work` is read again, nor `runs_background_jobs` called. All must outlive
// this object. `runs_background_jobs` is the 0/1 gauge coordinator_background_jobs_leader.
class ServerMetrics {
 public:
  ServerMetrics(storage::Store* store, WorkStore* work, std::function<bool()> runs_background_jobs);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

 private:
  std::vector<uint64_t> callbacks_;
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_SERVER_METRICS_H_
