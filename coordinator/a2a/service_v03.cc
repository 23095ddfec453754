#include "coordinator/a2a/service_v03.h"

#include <optional>
#include <string>
#include <utility>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/v03_proto.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "grpcpp/client_context.h"

namespace coordinator {
namespace {

namespace pb03 = ::a2a::v1;
namespace pb10 = ::lf::a2a::v1;
namespace v03 = a2a_protocol::v03;

std::string Metadata(const grpc::ServerContext* context, const char* key) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

// The agent a call names (kTenantBinaryMetadata, else kTenantMetadata; "" for none).
std::string Tenant(const grpc::ServerContext* context) {
  const std::string binary = Metadata(context, kTenantBinaryMetadata);
  return binary.empty() ? Metadata(context, kTenantMetadata) : binary;
}

// The 1.0 call made for `context` (made from it, so that it ends when the caller goes and by the
// caller's deadline): the caller's credentials and extensions, a2a-version 1.0. Refuses a call
// that asks for another version than 0.3.
absl::Status Prepare(const grpc::ServerContext* context, grpc::ClientContext* inner) {
  switch (v03::ParseVersion(Metadata(context, a2a_protocol::kVersionHeader))) {
    case v03::AskedVersion::kV10:
      return absl::UnimplementedError(
          "a2a.v1.A2AService is A2A 0.3; this call says A2A-Version 1.0 (use "
          "lf.a2a.v1.A2AService)");
    case v03::AskedVersion::kOther:
      return a2a_protocol::VersionNotSupported(Metadata(context, a2a_protocol::kVersionHeader),
                                               "server");
    default:
      break;
  }
  inner->AddMetadata(a2a_protocol::kVersionHeader, a2a_protocol::kVersion);
  inner->AddMetadata(kCallerVersionMetadata, v03::kVersion);
  for (const char* key : {"authorization", "a2a-extensions", "x-a2a-extensions"}) {
    const std::string value = Metadata(context, key);
    if (!value.empty()) {
      inner->AddMetadata(
          absl::string_view(key) == "authorization" ? "authorization" : "a2a-extensions", value);
    }
  }
  return absl::OkStatus();
}

// The 1.0 service's status as 0.3 sends it.
grpc::Status Answer(const grpc::Status& status) {
  if (status.ok()) return status;
  const std::optional<std::string> reason = a2a_protocol::Reason(common::FromGrpcStatus(status));
  if (reason == a2a_protocol::kUnsupportedOperation ||
      reason == a2a_protocol::kPushNotificationNotSupported) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, status.error_message(),
                        status.error_details());
  }
  return status;
}

grpc::Status Refuse(const absl::Status& status) { return common::ToGrpcStatus(status); }

}  // namespace

void A2AServiceV03::set_channel(std::shared_ptr<grpc::Channel> channel) {
  absl::MutexLock lock(&mu_);
  stub_ = pb10::A2AService::NewStub(std::move(channel));
}

std::shared_ptr<pb10::A2AService::Stub> A2AServiceV03::Stub() {
  absl::MutexLock lock(&mu_);
  return stub_;
}

// Each method: the stub (UNAVAILABLE before start), the 1.0 call's context, the conversion.
#define COORD_V03_PREPARE(inner)                                                       \
  std::shared_ptr<pb10::A2AService::Stub> stub = Stub();                               \
  if (stub == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "starting"); \
  const std::unique_ptr<grpc::ClientContext> inner##_owner =                           \
      grpc::ClientContext::FromServerContext(*context);                                \
  grpc::ClientContext& inner = *inner##_owner;                                         \
  if (absl::Status prepared = Prepare(context, &inner); !prepared.ok()) return Refuse(prepared)

grpc::Status A2AServiceV03::SendMessage(grpc::ServerContext* context,
                                        const pb03::SendMessageRequest* request,
                                        pb03::SendMessageResponse* response) {
  COORD_V03_PREPARE(inner);
  pb10::SendMessageResponse answer;
  grpc::Status status =
      stub->SendMessage(&inner, v03::FromProto(*request, Tenant(context)), &answer);
  if (status.ok()) *response = v03::ToProto(answer);
  return Answer(status);
}

namespace {

// Relays a 1.0 stream as 0.3 events until it ends or the caller goes.
template <typename Reader>
grpc::Status Relay(grpc::ClientContext* inner, Reader* reader,
                   grpc::ServerWriter<pb03::StreamResponse>* writer, bool send_stream) {
  pb10::StreamResponse event;
  while (reader->Read(&event)) {
    if (!writer->Write(v03::ToProto(event, send_stream))) {
      inner->TryCancel();  // the caller went away
      break;
    }
  }
  return Answer(reader->Finish());
}

}  // namespace

grpc::Status A2AServiceV03::SendStreamingMessage(grpc::ServerContext* context,
                                                 const pb03::SendMessageRequest* request,
                                                 grpc::ServerWriter<pb03::StreamResponse>* writer) {
  COORD_V03_PREPARE(inner);
  auto reader = stub->SendStreamingMessage(&inner, v03::FromProto(*request, Tenant(context)));
  return Relay(&inner, reader.get(), writer, /*send_stream=*/true);
}

grpc::Status A2AServiceV03::GetTask(grpc::ServerContext* context,
                                    const pb03::GetTaskRequest* request, pb03::Task* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<std::string> id = v03::TaskIdOfName(request->name(), "name");
  if (!id.ok()) return Refuse(id.status());
  pb10::GetTaskRequest get;
  get.set_tenant(Tenant(context));
  get.set_id(*id);
  if (request->history_length() < 0) {
    return Refuse(absl::InvalidArgumentError("history_length must not be negative"));
  }
  // 0 means "no limit" in 0.3.
  if (request->history_length() > 0) get.set_history_length(request->history_length());
  pb10::Task task;
  grpc::Status status = stub->GetTask(&inner, get, &task);
  if (status.ok()) *response = v03::ToProto(task);
  return Answer(status);
}

grpc::Status A2AServiceV03::CancelTask(grpc::ServerContext* context,
                                       const pb03::CancelTaskRequest* request,
                                       pb03::Task* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<std::string> id = v03::TaskIdOfName(request->name(), "name");
  if (!id.ok()) return Refuse(id.status());
  pb10::CancelTaskRequest cancel;
  cancel.set_tenant(Tenant(context));
  cancel.set_id(*id);
  pb10::Task task;
  grpc::Status status = stub->CancelTask(&inner, cancel, &task);
  if (status.ok()) *response = v03::ToProto(task);
  return Answer(status);
}

grpc::Status A2AServiceV03::TaskSubscription(grpc::ServerContext* context,
                                             const pb03::TaskSubscriptionRequest* request,
                                             grpc::ServerWriter<pb03::StreamResponse>* writer) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<std::string> id = v03::TaskIdOfName(request->name(), "name");
  if (!id.ok()) return Refuse(id.status());
  pb10::SubscribeToTaskRequest subscribe;
  subscribe.set_tenant(Tenant(context));
  subscribe.set_id(*id);
  auto reader = stub->SubscribeToTask(&inner, subscribe);
  return Relay(&inner, reader.get(), writer, /*send_stream=*/false);
}

grpc::Status A2AServiceV03::CreateTaskPushNotificationConfig(
    grpc::ServerContext* context, const pb03::CreateTaskPushNotificationConfigRequest* request,
    pb03::TaskPushNotificationConfig* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<std::string> task_id = v03::TaskIdOfName(request->parent(), "parent");
  if (!task_id.ok()) return Refuse(task_id.status());
  if (!request->config().name().empty()) {
    absl::StatusOr<std::string> named = v03::TaskIdOfName(
        request->config().name().substr(0, request->config().name().find("/pushNotification")),
        "config.name");
    if (!named.ok() || *named != *task_id) {
      return Refuse(absl::InvalidArgumentError(
          absl::StrCat("config.name \"", request->config().name(), "\" names another task than ",
                       request->parent())));
    }
  }
  pb10::TaskPushNotificationConfig config =
      v03::FromProto(request->config().push_notification_config(), *task_id, request->config_id());
  config.set_tenant(Tenant(context));
  pb10::TaskPushNotificationConfig created;
  grpc::Status status = stub->CreateTaskPushNotificationConfig(&inner, config, &created);
  if (status.ok()) *response = v03::ToProto(created);
  return Answer(status);
}

grpc::Status A2AServiceV03::GetTaskPushNotificationConfig(
    grpc::ServerContext* context, const pb03::GetTaskPushNotificationConfigRequest* request,
    pb03::TaskPushNotificationConfig* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<v03::PushConfigName> name = v03::PushConfigIdsOfName(request->name(), "name");
  if (!name.ok()) return Refuse(name.status());
  pb10::GetTaskPushNotificationConfigRequest get;
  get.set_tenant(Tenant(context));
  get.set_task_id(name->task_id);
  get.set_id(name->config_id);
  pb10::TaskPushNotificationConfig config;
  grpc::Status status = stub->GetTaskPushNotificationConfig(&inner, get, &config);
  if (status.ok()) *response = v03::ToProto(config);
  return Answer(status);
}

grpc::Status A2AServiceV03::ListTaskPushNotificationConfig(
    grpc::ServerContext* context, const pb03::ListTaskPushNotificationConfigRequest* request,
    pb03::ListTaskPushNotificationConfigResponse* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<std::string> task_id = v03::TaskIdOfName(request->parent(), "parent");
  if (!task_id.ok()) return Refuse(task_id.status());
  pb10::ListTaskPushNotificationConfigsRequest list;
  list.set_tenant(Tenant(context));
  list.set_task_id(*task_id);
  list.set_page_size(request->page_size() > 0 ? request->page_size() : v03::kListPageSize);
  list.set_page_token(request->page_token());
  pb10::ListTaskPushNotificationConfigsResponse page;
  grpc::Status status = stub->ListTaskPushNotificationConfigs(&inner, list, &page);
  if (!status.ok()) return Answer(status);
  for (const pb10::TaskPushNotificationConfig& config : page.configs()) {
    *response->add_configs() = v03::ToProto(config);
  }
  response->set_next_page_token(page.next_page_token());
  return status;
}

grpc::Status A2AServiceV03::GetAgentCard(grpc::ServerContext* context,
                                         const pb03::GetAgentCardRequest*, pb03::AgentCard*) {
  COORD_V03_PREPARE(inner);
  pb10::GetExtendedAgentCardRequest get;
  get.set_tenant(Tenant(context));
  pb10::AgentCard card;
  grpc::Status status = stub->GetExtendedAgentCard(&inner, get, &card);
  // No card offers an extended card (the 1.0 service answers UnsupportedOperation); 0.3 names
  // that AuthenticatedExtendedCardNotConfigured. An unknown agent stays NOT_FOUND.
  if (status.ok() ||
      a2a_protocol::Reason(common::FromGrpcStatus(status)) == a2a_protocol::kUnsupportedOperation) {
    return Refuse(a2a_protocol::ExtendedAgentCardNotConfigured(
        "the card declares no authenticated extended card (supportsAuthenticatedExtendedCard "
        "is false): read the public agent card on the HTTP port"));
  }
  return status;
}

grpc::Status A2AServiceV03::DeleteTaskPushNotificationConfig(
    grpc::ServerContext* context, const pb03::DeleteTaskPushNotificationConfigRequest* request,
    google::protobuf::Empty* response) {
  COORD_V03_PREPARE(inner);
  absl::StatusOr<v03::PushConfigName> name = v03::PushConfigIdsOfName(request->name(), "name");
  if (!name.ok()) return Refuse(name.status());
  pb10::DeleteTaskPushNotificationConfigRequest del;
  del.set_tenant(Tenant(context));
  del.set_task_id(name->task_id);
  del.set_id(name->config_id);
  return Answer(stub->DeleteTaskPushNotificationConfig(&inner, del, response));
}

#undef COORD_V03_PREPARE

}  // namespace coordinator
