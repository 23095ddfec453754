// The coordinator the gateway's tests start in-process: loopback gRPC on an ephemeral port, no
// HTTP port unless asked, the test store under `data_dir` (RocksDB, or etcd in the etcd variant
// of the binary), and fast delivery retries (20 ms doubling to 200 ms) so that no test waits on
// backoff. Tests change what they need on the result. Test-only.
#ifndef COORDINATOR_A2A_TEST_SERVER_OPTIONS_H_
#define COORDINATOR_A2A_TEST_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "coordinator/server.h"
#include "storage/testing/test_store.h"

namespace coordinator {

inline absl::StatusOr<ServerOptions> GatewayTestServerOptions(const std::string& data_dir) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = data_dir;
  RETURN_IF_ERROR(
      storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
  options.http_listen = "";
  options.worker_threads = 4;
  options.gateway.initial_backoff = absl::Milliseconds(20);
  options.gateway.max_backoff = absl::Milliseconds(200);
  options.gateway.delivery_threads = 2;
  return options;
}

// The value of one of the gateway's delivery counters (coordinator_a2a_delivery_*_total):
// process-wide, so a test compares it before and after.
inline uint64_t DeliveryCounter(const std::string& name) {
  return common::MetricsRegistry::Default().AddCounter(name, "")->WithLabels({})->value();
}

}  // namespace coordinator

#endif  // COORDINATOR_A2A_TEST_SERVER_OPTIONS_H_
