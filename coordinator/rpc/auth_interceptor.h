// The gRPC side of authentication (docs/security.md). Every coordinator server installs the
// interceptor: for each call it reads the method and the `authorization` metadata before any
// handler runs, asks the Authorizer (coordinator/rpc/auth.h), and records the verdict for the call.
// A server interceptor in gRPC 1.51 cannot fail a call, so the handlers do: HandleUnary
// (coordinator/rpc/unary_handler.h) and the streaming handlers call CallerOf(context) first and
// finish the call with its status when it is not OK. Health checks and reflection are not our
// handlers: they stay open.
#ifndef COORDINATOR_RPC_AUTH_INTERCEPTOR_H_
#define COORDINATOR_RPC_AUTH_INTERCEPTOR_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "coordinator/rpc/auth.h"
#include "coordinator/rpc/token_source.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"

namespace coordinator {

class AuthInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `tokens` null: authentication is off and every caller may do everything. Each call is
  // checked against the tokens in force when it starts.
  explicit AuthInterceptorFactory(std::shared_ptr<TokenSource> tokens);
  ~AuthInterceptorFactory() override;

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  std::shared_ptr<TokenSource> tokens_;
};

// The caller of the call behind `context`: UNAUTHENTICATED or PERMISSION_DENIED when the call
// must not run. A call the interceptor did not see (a server assembled without it, as some
// in-process tests do) is unrestricted while no server of this process has authentication on,
// and refused otherwise.
[[nodiscard]] absl::StatusOr<Caller> CallerOf(const grpc::ServerContextBase* context);

// What a stream ends with when the token it was opened with is revoked or expires.
grpc::Status TokenRevokedStatus();

// For streaming handlers: ends the stream of `context` with `abort` once its caller's token is
// revoked or expires (TokenSource::OnRevoke: `abort` holds the stream weakly; drop the handle in
// OnDone). Null when no token authenticated the call.
[[nodiscard]] std::unique_ptr<TokenSource::Registration> OnCallerTokenRevoked(
    const grpc::ServerContextBase* context, std::function<void()> abort);

}  // namespace coordinator

#endif  // COORDINATOR_RPC_AUTH_INTERCEPTOR_H_
