// The column families of the database, declared once. RocksDB opens them by name; the enum's
// value is the index into the handle vector. Never reorder or renumber: append new families at
// the end (before kCount) and give each a name that never changes.
#ifndef STORAGE_COLUMN_FAMILY_H_
#define STORAGE_COLUMN_FAMILY_H_

#include <array>
#include <cstddef>

namespace storage {

enum class ColumnFamily : int {
  kDefault = 0,   // database metadata: schema version
  kContexts = 1,  // per-context records: the context itself, its commands, its conversation
  kIndex = 2,     // secondary indexes (contexts by agent, ...)
  kTasks = 3,     // retry state, breaker records and the breaker log
  kA2A = 4,       // A2A agents, tasks, per-task event logs, push-notification configs
  kWork = 5,      // runs of workstreams and task graphs: items, leases, checkpoints
  kCount = 6,
};

inline constexpr std::array<const char*, static_cast<size_t>(ColumnFamily::kCount)>
    kColumnFamilyNames = {"default", "contexts", "index", "tasks", "a2a", "work"};

inline const char* ColumnFamilyName(ColumnFamily cf) {
  return kColumnFamilyNames[static_cast<size_t>(cf)];
}

}  // namespace storage

#endif  // STORAGE_COLUMN_FAMILY_H_
