// gRPC face of A2A 0.3: a2a.v1.A2AService (protos/a2a/v0_3/a2a.proto) on the coordinator's gRPC
// port beside lf.a2a.v1.A2AService. It stores nothing and decides nothing itself: each call is
// converted to its 1.0 request (a2a_protocol/v03_proto.h), made on the 1.0 service through a
// channel to this server (the caller's authorization and extensions forwarded, a2a-version 1.0),
// and the answer converted back, so limits, authorization, storage and stream semantics are the
// 1.0 service's (docs/a2a-0.3.md section 5).
//
// 0.3 has no tenant: a call reaches the agent named by the `coordinator-tenant` metadata, else
// the tenant-less rules (a task's own agent; a new task to --default_agent, or the one agent).
// Errors keep the 1.0 service's code and ErrorInfo, except UnsupportedOperation and
// PushNotificationNotSupported, which 0.3 servers send as UNIMPLEMENTED, and GetAgentCard, which
// is AuthenticatedExtendedCardNotConfigured (no card offers an extended card). A call that says
// A2A-Version 1.0 is UNIMPLEMENTED (it names the 1.0 service); another version
// VERSION_NOT_SUPPORTED.
//
// The methods are synchronous (gRPC's sync thread pool): a stream holds a thread while it is
// open. The 1.0 call is made from the caller's context (ClientContext::FromServerContext), so it
// ends when the caller goes or its deadline passes.
#ifndef COORDINATOR_A2A_SERVICE_V03_H_
#define COORDINATOR_A2A_SERVICE_V03_H_

#include <memory>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_http/bindings.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace coordinator {

// The metadata a 0.3 call names its agent with, and the one a 0.3 call relayed to the 1.0
// service carries (a2a_http/bindings.h): this service adds the latter too.
using a2a_http::kCallerVersionMetadata;
using a2a_http::kTenantBinaryMetadata;
using a2a_http::kTenantMetadata;

class A2AServiceV03 final : public ::a2a::v1::A2AService::Service {
 public:
  // The channel to this server's 1.0 service: known once the server has started (calls before it
  // are UNAVAILABLE).
  void set_channel(std::shared_ptr<grpc::Channel> channel);

  grpc::Status SendMessage(grpc::ServerContext* context,
                           const ::a2a::v1::SendMessageRequest* request,
                           ::a2a::v1::SendMessageResponse* response) override;
  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const ::a2a::v1::SendMessageRequest* request,
                                    grpc::ServerWriter<::a2a::v1::StreamResponse>* writer) override;
  grpc::Status GetTask(grpc::ServerContext* context, const ::a2a::v1::GetTaskRequest* request,
                       ::a2a::v1::Task* response) override;
  grpc::Status CancelTask(grpc::ServerContext* context, const ::a2a::v1::CancelTaskRequest* request,
                          ::a2a::v1::Task* response) override;
  grpc::Status TaskSubscription(grpc::ServerContext* context,
                                const ::a2a::v1::TaskSubscriptionRequest* request,
                                grpc::ServerWriter<::a2a::v1::StreamResponse>* writer) override;
  grpc::Status CreateTaskPushNotificationConfig(
      grpc::ServerContext* context,
      const ::a2a::v1::CreateTaskPushNotificationConfigRequest* request,
      ::a2a::v1::TaskPushNotificationConfig* response) override;
  grpc::Status GetTaskPushNotificationConfig(
      grpc::ServerContext* context, const ::a2a::v1::GetTaskPushNotificationConfigRequest* request,
      ::a2a::v1::TaskPushNotificationConfig* response) override;
  grpc::Status ListTaskPushNotificationConfig(
      grpc::ServerContext* context, const ::a2a::v1::ListTaskPushNotificationConfigRequest* request,
      ::a2a::v1::ListTaskPushNotificationConfigResponse* response) override;
  grpc::Status GetAgentCard(grpc::ServerContext* context,
                            const ::a2a::v1::GetAgentCardRequest* request,
                            ::a2a::v1::AgentCard* response) override;
  grpc::Status DeleteTaskPushNotificationConfig(
      grpc::ServerContext* context,
      const ::a2a::v1::DeleteTaskPushNotificationConfigRequest* request,
      google::protobuf::Empty* response) override;

 private:
  std::shared_ptr<lf::a2a::v1::A2AService::Stub> Stub();

  absl::Mutex mu_;
  std::shared_ptr<lf::a2a::v1::A2AService::Stub> stub_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_SERVICE_V03_H_
