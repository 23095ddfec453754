#include "coordinator/rpc/admin_service.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/records/time_util.h"
#include "storage/backup.h"

namespace coordinator {
namespace {

int64_t DirectoryBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) total += static_cast<int64_t>(entry.file_size(ec));
  }
  return total;
}

}  // namespace

grpc::ServerUnaryReactor* AdminServiceImpl::Backup(grpc::CallbackServerContext* context,
                                                   const v1::BackupRequest* request,
                                                   v1::BackupResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request]() -> absl::StatusOr<v1::BackupResponse> {
        const absl::Time start = absl::Now();
        absl::Status s = storage::Backup(*store_, data_dir_, request->dir(), backup_root_);
        if (!s.ok()) return s;
        v1::BackupResponse out;
        out.set_dir(request->dir());
        *out.mutable_time() = ToProtoTime(start);
        out.set_size_bytes(DirectoryBytes(request->dir()));
        LOG_INFO("backup written to %s (%d bytes)", request->dir(), out.size_bytes());
        return out;
      });
}

grpc::ServerUnaryReactor* AdminServiceImpl::CollectGarbage(grpc::CallbackServerContext* context,
                                                           const v1::CollectGarbageRequest* request,
                                                           v1::CollectGarbageResponse* response) {
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request]() -> absl::StatusOr<v1::CollectGarbageResponse> {
        absl::Duration ttl = retention_options_.terminal_ttl;
        if (request->has_older_than()) {
          const google::protobuf::Duration& d = request->older_than();
          if (d.seconds() < 0 || d.nanos() < 0 || d.nanos() > 999999999 ||
              (d.seconds() == 0 && d.nanos() == 0) || d.seconds() > 315576000000) {
            return absl::InvalidArgumentError("older_than must be a positive duration");
          }
          ttl = FromProtoDuration(d);
        } else if (ttl <= absl::ZeroDuration()) {
          return absl::FailedPreconditionError(
              "retention is off (--retention_terminal_ttl=0): pass older_than to collect now");
        }
        if (request->max_deletes() < 0 || request->max_deletes() > kMaxGcDeletesPerCall) {
          return absl::InvalidArgumentError(
              absl::StrCat("max_deletes must be between 1 and ", kMaxGcDeletesPerCall));
        }
        const int64_t max_deletes = request->max_deletes() > 0
                                        ? request->max_deletes()
                                        : retention_options_.max_deletes_per_second;
        absl::StatusOr<v1::CollectGarbageResponse> result =
            retention_->RunPass(absl::Now() - ttl, max_deletes, request->dry_run());
        if (result.ok() && !request->dry_run()) {
          LOG_INFO("garbage collection: deleted %d records", result->records());
        }
        return result;
      });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ExportContext(grpc::CallbackServerContext* context,
                                                          const v1::ExportContextRequest* request,
                                                          v1::ContextExport* response) {
  // Open to readers, and to agents for the contexts they own or take part in (docs/security.md):
  // the check reads the context of the export's own snapshot.
  return HandleUnary(
      context, calls_, CallKind::kPool, response,
      [this, request](const Caller& caller) -> absl::StatusOr<v1::ContextExport> {
        ASSIGN_OR_RETURN(v1::ContextExport out, exporter_->Export(*request, AccessOf(caller)));
        if (caller.scoped()) {
          if (!out.has_context()) {
            return absl::PermissionDeniedError(
                absl::StrCat("agent ", caller.principal, " may not export ", request->context_id(),
                             ": no context record says who may read it"));
          }
          RETURN_IF_ERROR(CheckContextRead(caller, out.context()));
        }
        return out;
      });
}

}  // namespace coordinator
