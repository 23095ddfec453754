// The range helpers of the stores' purge steps (see purge.h).
#include "coordinator/store/records/purge.h"

#include <memory>

#include "common/status_macros.h"
#include "storage/key_codec.h"

namespace coordinator {

absl::StatusOr<bool> DeletePrefix(storage::Transaction& txn, storage::ColumnFamily cf,
                                  const std::string& prefix, int64_t limit, int64_t* deleted) {
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(cf, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    // Checked before each key, so a prefix with exactly the budget left counts as finished.
    if (*deleted >= limit) return false;
    RETURN_IF_ERROR(txn.Delete(cf, it->key()));
    ++*deleted;
  }
  RETURN_IF_ERROR(it->status());
  return true;
}

absl::StatusOr<int64_t> CountPrefix(storage::Store& store, storage::ColumnFamily cf,
                                    const std::string& prefix) {
  int64_t n = 0;
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(cf, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) ++n;
  RETURN_IF_ERROR(it->status());
  return n;
}

}  // namespace coordinator
