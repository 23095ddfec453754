// Changes to an etcd data set as they are committed, from any replica: one etcd watch over the
// column families asked for, from a revision on. The basis of change notifications between
// coordinator replicas (issue 21): a replica hears what another wrote, in commit order, with
// nothing missed across a member's loss (the watch resumes on another member from the revision
// after the last one delivered).
#ifndef STORAGE_ETCD_WATCH_H_
#define STORAGE_ETCD_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/column_family.h"
#include "storage/etcd_store.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace storage {

class EtcdClient;

struct EtcdChange {
  ColumnFamily cf;
  std::string key;                   // without the prefix and family
  std::optional<std::string> value;  // nullopt: deleted
  int64_t revision = 0;              // of the commit that made the change
};

class EtcdWatch {
 public:
  // Delivers every change to `families` committed after `after_revision` (0: from now) to
  // `on_changes`, one commit's changes at a time, in commit order, on the watch's own thread.
  // `on_gap` runs when changes were lost for good (the cluster compacted the revisions the
  // watch had to resume from): the caller then reads the state again; delivery goes on from
  // the oldest revision still kept.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdWatch>> Start(
      const EtcdStoreOptions& options, std::vector<ColumnFamily> families, int64_t after_revision,
      std::function<void(const std::vector<EtcdChange>&)> on_changes,
      std::function<void(int64_t compacted_revision)> on_gap);

  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // The revision of the last commit delivered.
  int64_t delivered_revision() const;

 private:
  EtcdWatch(std::unique_ptr<EtcdClient> client, std::string prefix,
            std::vector<ColumnFamily> families, int64_t after_revision,
            std::function<void(const std::vector<EtcdChange>&)> on_changes,
            std::function<void(int64_t)> on_gap);
  void Run();
  // One stream, until it fails or the watch stops.
  void Stream();

  const std::unique_ptr<EtcdClient> client_;
  const std::string prefix_;
  const std::vector<ColumnFamily> families_;
  const std::function<void(const std::vector<EtcdChange>&)> on_changes_;
  const std::function<void(int64_t)> on_gap_;
  mutable absl::Mutex mu_;
  int64_t delivered_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;  // of the open stream
  std::thread thread_;
};

}  // namespace storage

#endif  // STORAGE_ETCD_WATCH_H_
