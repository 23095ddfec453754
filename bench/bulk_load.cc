// bench_bulk_load: fills a data dir with contexts offline, through the coordinator's own store
// code (coordinator::ContextStore on storage::RocksStore), for the read workload (W4) and the
// 1,000,000-context resource figures. The records are exactly what CreateContext writes (the
// context header and the agent index entry); only the per-write WAL sync is skipped, since
// nobody is acknowledged here. The database is closed (WAL synced) before it exits, and the
// coordinator must not be running on the dir.
//
//   bench_bulk_load --data_dir=DIR --contexts=1000000 --run_id=bench [--threads=4]
//
// Prints one line of JSON: contexts written, seconds, rate.
#include <atomic>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/store/all_tallies.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/records/limits.h"
#include "storage/rocks_store.h"

ABSL_FLAG(std::string, data_dir, "", "the coordinator's data dir (created when missing)");
ABSL_FLAG(int64_t, contexts, 1000000, "contexts to write");
ABSL_FLAG(std::string, run_id, "bench", "prefix of the context ids (as coord_bench --run_id)");
ABSL_FLAG(int, threads, 4, "writer threads");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("bench_bulk_load --data_dir=DIR --contexts=N --run_id=PREFIX");
  absl::ParseCommandLine(argc, argv);
  storage::StoreOptions options;
  options.path = absl::GetFlag(FLAGS_data_dir);
  options.sync_writes = false;  // nothing is acknowledged to anyone; closing syncs the WAL
  absl::StatusOr<std::unique_ptr<storage::RocksStore>> store = storage::RocksStore::Open(options);
  if (!store.ok()) {
    std::cerr << "bench_bulk_load: " << store.status() << "\n";
    return 1;
  }
  // What the coordinator does first on a new data dir (CoordinatorServer::BuildDerivedRecords):
  // mark the running totals and the contexts' time index as kept, so that the writes below
  // maintain them as CreateContext does. Without it the coordinator would take the loaded dir
  // for one written before they existed and rebuild both at its first start (10 s for 1,000,000
  // contexts), which is an upgrade's cost, not a start's.
  for (auto ensure :
       {coordinator::EnsureTalliesBuilt, coordinator::ContextStore::EnsureTimeIndex}) {
    absl::StatusOr<bool> built = ensure(**store);
    if (!built.ok()) {
      std::cerr << "bench_bulk_load: " << built.status() << "\n";
      return 1;
    }
  }
  coordinator::ContextStore contexts(store->get(), coordinator::Limits{});
  const int64_t n = absl::GetFlag(FLAGS_contexts);
  const std::string prefix = absl::GetFlag(FLAGS_run_id);
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  absl::Status first_error;  // guarded by mu
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, absl::GetFlag(FLAGS_threads)); ++t) {
    threads.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++) {
        coordinator::v1::TaskContext c;
        // The same ids and fields as coord_bench's CreateContext set-up (bench/workloads.cc).
        c.set_context_id(absl::StrCat(prefix, "-ctx-", i));
        c.set_agent("green");
        c.set_workspace_dir(absl::StrCat("/ws/", c.context_id()));
        absl::StatusOr<coordinator::v1::TaskContext> r = contexts.Create(c);
        if (!r.ok() && !absl::IsAlreadyExists(r.status())) {
          absl::MutexLock lock(&mu);
          if (first_error.ok()) first_error = r.status();
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  store->reset();  // close: syncs the WAL
  if (!first_error.ok()) {
    std::cerr << "bench_bulk_load: " << first_error << "\n";
    return 1;
  }
  std::cout << absl::StrFormat(
                   "{\"workload\":\"bulk_load\",\"contexts\":%d,\"seconds\":%.2f,\"rate\":%.0f}", n,
                   seconds, n / seconds)
            << std::endl;
  return 0;
}
