// Helpers for the tests of the RocksDB store itself.
#ifndef STORAGE_TESTING_ROCKS_TEST_UTIL_H_
#define STORAGE_TESTING_ROCKS_TEST_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/rocks_store.h"
#include "storage/store.h"

namespace storage::testing {

// A RocksDB store at `path` with the default options.
inline absl::StatusOr<std::unique_ptr<RocksStore>> OpenAt(const std::string& path) {
  StoreOptions options;
  options.path = path;
  return RocksStore::Open(options);
}

// Puts one key in a transaction of its own.
inline absl::Status Put(Store& store, ColumnFamily cf, const std::string& key,
                        const std::string& value) {
  return store.RunTransaction(
      [&](Transaction& txn) -> absl::Status { return txn.Put(cf, key, value); });
}

}  // namespace storage::testing

#endif  // STORAGE_TESTING_ROCKS_TEST_UTIL_H_
