#include "agent_runtime/coordinator_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/reconnect.h"
#include "common/uuid.h"

namespace agent_runtime {
namespace {

namespace a2apb = ::lf::a2a::v1;

bool Ended(a2apb::TaskState s) {
  return s == a2apb::TASK_STATE_COMPLETED || s == a2apb::TASK_STATE_FAILED ||
         s == a2apb::TASK_STATE_CANCELED || s == a2apb::TASK_STATE_REJECTED ||
         s == a2apb::TASK_STATE_INPUT_REQUIRED || s == a2apb::TASK_STATE_AUTH_REQUIRED;
}

}  // namespace

std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& target, const common::ClientCredentialOptions& credentials) {
  grpc::ChannelArguments args;
  common::SetQuickReconnect(args);
  args.SetMaxReceiveMessageSize(64 << 20);
  return common::MakeChannel(target, credentials, args);
}

GatewayClient::GatewayClient(std::shared_ptr<grpc::Channel> channel, RetryOptions options)
    : stub_(a2apb::A2AService::NewStub(std::move(channel))), options_(options) {}

absl::StatusOr<a2apb::Task> GatewayClient::Send(const std::string& tenant,
                                                const a2apb::Message& message,
                                                const std::function<bool()>& stop) {
  a2apb::SendMessageRequest request;
  request.set_tenant(tenant);
  *request.mutable_message() = message;
  if (request.message().message_id().empty()) {
    request.mutable_message()->set_message_id(common::NewUuid());
  }
  if (request.message().role() == a2apb::ROLE_UNSPECIFIED) {
    request.mutable_message()->set_role(a2apb::ROLE_USER);
  }
  request.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse response;
  absl::Status s = CallWithRetry(
      [&](grpc::ClientContext* context) {
        a2a_protocol::AddVersion(context);
        return stub_->SendMessage(context, request, &response);
      },
      options_, stop);
  if (!s.ok()) return s;
  if (!response.has_task()) return absl::InternalError("the gateway answered without a task");
  return response.task();
}

absl::StatusOr<a2apb::Task> GatewayClient::WaitForTask(const std::string& tenant,
                                                       const std::string& task_id,
                                                       absl::Duration timeout,
                                                       const std::function<bool()>& stop) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration poll = absl::Milliseconds(20);
  while (true) {
    a2apb::GetTaskRequest request;
    request.set_tenant(tenant);
    request.set_id(task_id);
    a2apb::Task task;
    absl::Status s = CallWithRetry(
        [&](grpc::ClientContext* context) {
          a2a_protocol::AddVersion(context);
          return stub_->GetTask(context, request, &task);
        },
        options_, stop);
    if (!s.ok()) return s;
    if (Ended(task.status().state())) return task;
    if (stop != nullptr && stop()) return absl::CancelledError("stopped while waiting");
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("task ", task_id, " did not end within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(poll);
    poll = std::min(poll * 2, absl::Milliseconds(250));
  }
}

absl::StatusOr<a2apb::Task> GatewayClient::SendAndWait(const std::string& tenant,
                                                       const a2apb::Message& message,
                                                       absl::Duration timeout,
                                                       const std::function<bool()>& stop) {
  absl::StatusOr<a2apb::Task> task = Send(tenant, message, stop);
  if (!task.ok()) return task.status();
  if (Ended(task->status().state())) return task;
  return WaitForTask(tenant, task->id(), timeout, stop);
}

std::string FirstText(const a2apb::Message& message) {
  for (const a2apb::Part& part : message.parts()) {
    if (part.has_text()) return part.text();
  }
  return "";
}

std::string AllText(const a2apb::Message& message) {
  std::vector<std::string> texts;
  for (const a2apb::Part& part : message.parts()) {
    if (part.has_text()) texts.push_back(part.text());
  }
  return absl::StrJoin(texts, "\n");
}

std::string StatusText(const a2apb::Task& task) {
  return task.status().has_message() ? AllText(task.status().message()) : "";
}

}  // namespace agent_runtime
