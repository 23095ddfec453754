// gRPC's own log lines (gpr_log: a failed bind, a TLS handshake error, a transport problem) in
// the process's log format, so that a JSON log stays one JSON object per line. They carry the
// fields `source` ("grpc") and `location` (gRPC's source file and line).
#ifndef COMMON_GRPC_LOG_H_
#define COMMON_GRPC_LOG_H_

namespace common {

// Routes gRPC's logging to common::WriteLog. Call once, after InitFlags (which sets the format)
// and before gRPC is used. gRPC's verbosity stays as GRPC_VERBOSITY sets it (default ERROR).
void RouteGrpcLogs();

}  // namespace common

#endif  // COMMON_GRPC_LOG_H_
