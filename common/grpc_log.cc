#include "common/grpc_log.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/log.h"
#include "grpc/support/log.h"

namespace common {
namespace {

void WriteGrpcLog(gpr_log_func_args* args) {
  const LogLevel level =
      args->severity == GPR_LOG_SEVERITY_ERROR ? LogLevel::kError : LogLevel::kInfo;
  const std::string location =
      absl::StrCat(args->file == nullptr ? "" : args->file, ":", args->line);
  const LogField fields[] = {{"source", "grpc"}, {"location", location}};
  WriteLog(level, args->message == nullptr ? "" : args->message, fields);
}

}  // namespace

void RouteGrpcLogs() { gpr_set_log_function(&WriteGrpcLog); }

}  // namespace common
