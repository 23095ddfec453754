// coordctl health: the gRPC health check, for scripts and container health checks.
#include <iostream>

#include "coordctl/cli.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace coordctl {
namespace {

int RunHealth(const Env& env, const ParsedArgs& args) {
  auto stub = grpc::health::v1::Health::NewStub(env.channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(args.get("service"));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())
           << std::endl;
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitNo;
}

}  // namespace

void AddHealthCommands(std::vector<Command>* commands) {
  commands->push_back({{"health"},
                       "[--service NAME]",
                       "check the coordinator's health; exit 0 when SERVING",
                       {"service"},
                       {},
                       0,
                       0,
                       false,
                       RunHealth});
}

}  // namespace coordctl
