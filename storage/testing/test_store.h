// The store a test runs against. Suites that should hold on both backends open their store
// here: a RocksStore in the test's directory by default, or, when the environment variable
// COORD_TEST_ETCD names a file holding an etcd:// URL (ctest's `etcd` fixture writes one:
// tests/etcd_cluster.sh), an EtcdStore on that cluster under a prefix no other test uses.
// tests/CMakeLists.txt registers such suites twice, the second time as etcd.<test>.
#ifndef STORAGE_TESTING_TEST_STORE_H_
#define STORAGE_TESTING_TEST_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "storage/etcd_store.h"
#include "storage/store.h"

namespace storage::testing {

// Whether this process's tests run on etcd.
bool UseEtcd();

// The etcd:// URL of the test cluster; FAILED_PRECONDITION when there is none.
absl::StatusOr<std::string> TestEtcdUrl();

// Opens the backend this process's tests run on: RocksDB at `dir` (created when missing), or a
// prefix of the test etcd cluster of its own (the same one when `dir` is opened again in this
// process). `sync_writes` false makes RocksDB skip its fsyncs (faster tests of logic only);
// etcd always syncs.
absl::StatusOr<std::unique_ptr<Store>> OpenTestStore(const std::string& dir,
                                                     bool sync_writes = true);

// For tests that start a whole server (ServerOptions): on etcd, sets `store_url` and
// `etcd->prefix` so that the server opens the test cluster under the prefix OpenTestStore(dir)
// would use; on RocksDB leaves them alone (the server opens its data_dir).
absl::Status SetTestServerStore(const std::string& dir, std::string* store_url,
                                EtcdStoreOptions* etcd);

}  // namespace storage::testing

// Skips the current test on the etcd backend, saying why (a RocksDB-only feature).
#define SKIP_ON_ETCD(why) \
  if (::storage::testing::UseEtcd()) GTEST_SKIP() << "RocksDB only: " << (why)

#endif  // STORAGE_TESTING_TEST_STORE_H_
