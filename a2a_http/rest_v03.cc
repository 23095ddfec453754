#include "a2a_http/rest_v03.h"

#include <utility>
#include <vector>

#include "a2a/v0_3/a2a.pb.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/json_binding.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/validation.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace a2a_http {
namespace {

namespace pb = google::protobuf;
namespace pb03 = ::a2a::v1;

RestV03Result Error(int http_status, absl::Status error) {
  RestV03Result result;
  result.call.http_status = http_status;
  result.error = std::move(error);
  return result;
}

// Reads ProtoJSON `json` into `message` strictly (0.3 clients send only 0.3 fields).
absl::Status Read(absl::string_view json, pb::Message* message) {
  if (json.empty()) return absl::OkStatus();
  const auto parsed = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()),
                                                    message, pb::util::JsonParseOptions());
  if (parsed.ok()) return absl::OkStatus();
  const std::string why = parsed.message().as_string();
  return absl::InvalidArgumentError(absl::StrCat("the body is not the ProtoJSON of a2a.v1.",
                                                 message->GetDescriptor()->name(), ": ",
                                                 absl::string_view(why).substr(0, why.find('\n'))));
}

RestV03Result Call(const char* method_name, std::unique_ptr<pb::Message> request) {
  RestV03Result result;
  result.call.method = A2AServiceV03Descriptor()->FindMethodByName(method_name);
  result.call.request = std::move(request);
  return result;
}

// The history length of a GetTask query: historyLength (or history_length, as one 0.3 server
// also reads it); 0 when absent.
absl::StatusOr<int> HistoryLength(const std::multimap<std::string, std::string>& query) {
  for (const char* key : {"historyLength", "history_length"}) {
    auto it = query.find(key);
    if (it == query.end()) continue;
    int n = 0;
    if (!absl::SimpleAtoi(it->second, &n) || n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, " \"", it->second, "\" is not a non-negative integer"));
    }
    return n;
  }
  return 0;
}

RestV03Result CreatePushConfig(const std::string& task_name, absl::string_view body) {
  auto create = std::make_unique<pb03::CreateTaskPushNotificationConfigRequest>();
  pb::Struct object;
  if (!pb::util::JsonStringToMessage(pb::StringPiece(body.data(), body.size()), &object).ok()) {
    return Error(400, absl::InvalidArgumentError("the body is not a JSON object"));
  }
  if (object.fields().count("pushNotificationConfig") > 0 ||
      object.fields().count("push_notification_config") > 0) {
    // The bare config.
    absl::Status read = Read(body, create->mutable_config());
    if (!read.ok()) return Error(400, read);
  } else {
    absl::Status read = Read(body, create.get());
    if (!read.ok()) return Error(400, read);
  }
  if (!create->parent().empty() && create->parent() != task_name) {
    return Error(400, absl::InvalidArgumentError(absl::StrCat("parent \"", create->parent(),
                                                              "\" is not the path's ", task_name)));
  }
  create->set_parent(task_name);
  return Call("CreateTaskPushNotificationConfig", std::move(create));
}

}  // namespace

const pb::ServiceDescriptor* A2AServiceV03Descriptor() {
  static const pb::ServiceDescriptor* service =
      pb03::Task::descriptor()->file()->FindServiceByName("A2AService");
  return service;
}

RestV03Result MatchRestV03(absl::string_view verb, absl::string_view path,
                           const std::multimap<std::string, std::string>& query,
                           absl::string_view body) {
  const bool get = verb == "GET" || verb == "HEAD";
  const bool post = verb == "POST";
  auto not_allowed = [&] {
    return Error(405,
                 absl::InvalidArgumentError(absl::StrCat(verb, " is not allowed on /v1", path)));
  };
  if (path == "/message:send" || path == "/message:stream") {
    if (!post) return not_allowed();
    auto send = std::make_unique<pb03::SendMessageRequest>();
    absl::Status read = Read(body, send.get());
    if (!read.ok()) return Error(400, read);
    return Call(path == "/message:send" ? "SendMessage" : "SendStreamingMessage", std::move(send));
  }
  if (path == "/card") {
    if (!get) return not_allowed();
    return Call("GetAgentCard", std::make_unique<pb03::GetAgentCardRequest>());
  }
  if (!absl::StartsWith(path, "/tasks/")) {
    return Error(404,
                 absl::NotFoundError(absl::StrCat("no A2A 0.3 HTTP+JSON endpoint at /v1", path)));
  }
  const std::vector<std::string> segments =
      absl::StrSplit(path.substr(std::string_view("/tasks/").size()), '/');
  std::string id = segments[0];
  std::string action;
  if (const size_t colon = id.rfind(':'); colon != std::string::npos && segments.size() == 1) {
    action = id.substr(colon + 1);
    id = id.substr(0, colon);
  }
  if (id.empty()) return Error(404, absl::NotFoundError("no task id in the path"));
  // The path is percent-decoded: its ids may hold any byte, and protobuf's strings take UTF-8 only.
  if (absl::Status valid = common::ValidateId("the path's task id", id); !valid.ok()) {
    return Error(400, valid);
  }
  const std::string name = absl::StrCat("tasks/", id);
  if (segments.size() == 1) {
    if (action.empty()) {
      if (!get) return not_allowed();
      absl::StatusOr<int> history = HistoryLength(query);
      if (!history.ok()) return Error(400, history.status());
      auto read = std::make_unique<pb03::GetTaskRequest>();
      read->set_name(name);
      read->set_history_length(*history);
      return Call("GetTask", std::move(read));
    }
    if (action == "cancel") {
      if (!post) return not_allowed();
      auto cancel = std::make_unique<pb03::CancelTaskRequest>();
      cancel->set_name(name);  // a body, when sent, only repeats the name
      return Call("CancelTask", std::move(cancel));
    }
    if (action == "subscribe") {
      if (!get && !post) return not_allowed();
      auto subscribe = std::make_unique<pb03::TaskSubscriptionRequest>();
      subscribe->set_name(name);
      return Call("TaskSubscription", std::move(subscribe));
    }
  } else if (segments[1] == "pushNotificationConfigs" && segments.size() <= 3) {
    if (segments.size() == 2) {
      if (post) return CreatePushConfig(name, body);
      if (!get) return not_allowed();
      auto list = std::make_unique<pb03::ListTaskPushNotificationConfigRequest>();
      list->set_parent(name);
      return Call("ListTaskPushNotificationConfig", std::move(list));
    }
    if (!segments[2].empty()) {
      if (absl::Status valid = common::ValidateId("the path's config id", segments[2]);
          !valid.ok()) {
        return Error(400, valid);
      }
      const std::string config = absl::StrCat(name, "/pushNotificationConfigs/", segments[2]);
      if (get) {
        auto read = std::make_unique<pb03::GetTaskPushNotificationConfigRequest>();
        read->set_name(config);
        return Call("GetTaskPushNotificationConfig", std::move(read));
      }
      if (verb != "DELETE") return not_allowed();
      auto del = std::make_unique<pb03::DeleteTaskPushNotificationConfigRequest>();
      del->set_name(config);
      return Call("DeleteTaskPushNotificationConfig", std::move(del));
    }
  }
  return Error(404,
               absl::NotFoundError(absl::StrCat("no A2A 0.3 HTTP+JSON endpoint at /v1", path)));
}

int RestV03HttpStatus(const absl::Status& status) {
  const std::optional<std::string> reason = a2a_protocol::Reason(status);
  if (reason == a2a_protocol::kTaskNotCancelable) return 409;
  if (reason == a2a_protocol::kContentTypeNotSupported) return 415;
  if (reason == a2a_protocol::kInvalidAgentResponse) return 502;
  return a2a_protocol::HttpStatusCode(status);
}

std::string RestV03ErrorBody(const absl::Status& status) {
  return a2a_protocol::JsonRpcErrorObject(status);
}

}  // namespace a2a_http
