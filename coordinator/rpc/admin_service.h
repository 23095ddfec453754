// gRPC face of the data-care operations: coordinator.v1.Admin (Backup, CollectGarbage,
// ExportContext). Thin: each handler validates, hands the work to the pool
// (coordinator/rpc/unary_handler.h) and maps the result.
#ifndef COORDINATOR_RPC_ADMIN_SERVICE_H_
#define COORDINATOR_RPC_ADMIN_SERVICE_H_

#include <string>

#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/exporter.h"
#include "coordinator/store/retention.h"
#include "coordinator/v1/admin.grpc.pb.h"
#include "storage/store.h"

namespace coordinator {

class AdminServiceImpl final : public v1::Admin::CallbackService {
 public:
  // `data_dir` is the store's directory (backups may not go inside it); backups go only under
  // `backup_root` when it is not empty; `retention` gives the defaults of CollectGarbage.
  AdminServiceImpl(storage::Store* store, std::string data_dir, std::string backup_root,
                   Exporter* exporter, Retention* retention, RetentionOptions retention_options,
                   CallRunner* calls)
      : store_(store),
        data_dir_(std::move(data_dir)),
        backup_root_(std::move(backup_root)),
        exporter_(exporter),
        retention_(retention),
        retention_options_(retention_options),
        calls_(calls) {}

  grpc::ServerUnaryReactor* Backup(grpc::CallbackServerContext* context,
                                   const v1::BackupRequest* request,
                                   v1::BackupResponse* response) override;
  grpc::ServerUnaryReactor* CollectGarbage(grpc::CallbackServerContext* context,
                                           const v1::CollectGarbageRequest* request,
                                           v1::CollectGarbageResponse* response) override;
  grpc::ServerUnaryReactor* ExportContext(grpc::CallbackServerContext* context,
                                          const v1::ExportContextRequest* request,
                                          v1::ContextExport* response) override;

 private:
  storage::Store* store_;  // not owned
  const std::string data_dir_;
  const std::string backup_root_;
  Exporter* exporter_;    // not owned
  Retention* retention_;  // not owned
  const RetentionOptions retention_options_;
  CallRunner* calls_;  // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_ADMIN_SERVICE_H_
