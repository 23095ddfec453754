#include "storage/testing/test_store.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "storage/etcd_store.h"
#include "storage/rocks_store.h"

namespace storage::testing {

bool UseEtcd() {
  const char* file = std::getenv("COORD_TEST_ETCD");
  return file != nullptr && *file != '\0';
}

absl::StatusOr<std::string> TestEtcdUrl() {
  const char* file = std::getenv("COORD_TEST_ETCD");
  if (file == nullptr || *file == '\0') {
    return absl::FailedPreconditionError("COORD_TEST_ETCD is not set");
  }
  std::ifstream in(file);
  std::string url;
  if (!in || !std::getline(in, url)) {
    return absl::FailedPreconditionError(
        absl::StrCat("no etcd test cluster: cannot read ", file,
                     " (ctest starts one with the etcd fixture: tests/etcd_cluster.sh)"));
  }
  return std::string(absl::StripAsciiWhitespace(url));
}

namespace {

// The prefix of `dir`'s data set: its own per test, the same when opened again in this process.
std::string TestPrefix(const std::string& dir) {
  static const uint64_t nonce = absl::Uniform<uint64_t>(absl::BitGen());
  return absl::StrCat("/test/", getpid(), "-", nonce, "/", dir, "/");
}

}  // namespace

absl::Status SetTestServerStore(const std::string& dir, std::string* store_url,
                                EtcdStoreOptions* etcd) {
  if (!UseEtcd()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*store_url, TestEtcdUrl());
  etcd->prefix = TestPrefix(dir);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> OpenTestStore(const std::string& dir, bool sync_writes) {
  if (!UseEtcd()) {
    StoreOptions options;
    options.path = dir;
    options.sync_writes = sync_writes;
    ASSIGN_OR_RETURN(std::unique_ptr<RocksStore> store, RocksStore::Open(options));
    return std::unique_ptr<Store>(std::move(store));
  }
  ASSIGN_OR_RETURN(const std::string url, TestEtcdUrl());
  EtcdStoreOptions options;
  RETURN_IF_ERROR(ParseEtcdUrl(url, &options));
  // A prefix of its own: tests share the cluster and run at the same time. Opening the same
  // directory again in this process opens the same data, as with RocksDB.
  options.prefix = TestPrefix(dir);
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdStore> store, EtcdStore::Open(options));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace storage::testing
