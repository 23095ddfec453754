// Gives a request that cannot be parsed a clear status. gRPC parses a request before any
// handler runs; when that fails (a proto3 string field that is not valid UTF-8, truncated or
// garbled bytes) the callback API answers a bare UNIMPLEMENTED with no message, which tells the
// client nothing. This interceptor turns exactly that case into INVALID_ARGUMENT naming the
// method (DESIGN.md, guarantee 5).
#ifndef COORDINATOR_RPC_PARSE_ERROR_INTERCEPTOR_H_
#define COORDINATOR_RPC_PARSE_ERROR_INTERCEPTOR_H_

#include "grpcpp/support/server_interceptor.h"

namespace coordinator {

class ParseErrorInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_PARSE_ERROR_INTERCEPTOR_H_
