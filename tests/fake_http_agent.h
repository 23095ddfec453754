// A tiny A2A v1.0 agent over JSON-RPC or HTTP+JSON, on cpp-httplib, for tests of the
// coordinator's outbound bindings. It serves its card at /.well-known/agent-card.json (one
// interface: its own binding at /jsonrpc or /rest) and answers in the wire format of the
// specification (sections 9 and 11), writing Server-Sent Events by hand. What it does with a
// message depends on the message's first text part:
//   "hold"      the task WORKING ("holding"), then the stream stays open until CancelTask, which
//               ends it CANCELED
//   "fail"      an error: JSON-RPC {"error":{"code":-32603,...}} / HTTP 500 google.rpc.Status
//   "garbage"   an event whose data is not JSON
//   "plain"     one plain JSON answer instead of an event stream: the task COMPLETED
//   "no-stream" (JSON-RPC) "method not found" for SendStreamingMessage; SendMessage completes
//   otherwise   the task SUBMITTED, an artifact echoing the text, COMPLETED "done: <text>"
// It keeps its tasks, so GetTask reads one back and SubscribeToTask streams a held one (the
// task, then its end); a task it does not know is TaskNotFound, and a subscription to an ended
// one UnsupportedOperation. Complete() ends a held task COMPLETED, as an agent that finishes on
// its own; Forget() drops every task, as an agent restarted with its tasks in memory.
// kJsonRpcV03 is the same agent speaking A2A 0.3's JSON-RPC: a 0.3 card (protocolVersion
// 0.3.0, `url`, preferredTransport JSONRPC, 0.3's security scheme shape), the 0.3 methods
// (message/stream, message/send, tasks/get, tasks/cancel, tasks/resubscribe; 1.0 names are
// "method not found") and 0.3's JSON, converted with a2a_protocol/v03_json.h; "no-stream" is
// UnsupportedOperation (-32004) for message/stream, as the 0.3 SDKs answer without streaming.
// kRestV03 is the same agent on A2A 0.3's HTTP+JSON below /rest03/v1 (the ProtoJSON of 0.3's
// proto, a2a_protocol/v03_proto.h): errors as the 0.3 SDKs send them, {"code": <JSON-RPC code>,
// "message"} or a bare {"message"} with the HTTP status (404 task not found, 501 "no-stream").
// Header only: used by coordinator/a2a/ tests and by the process tests under tests/.
#ifndef TESTS_FAKE_HTTP_AGENT_H_
#define TESTS_FAKE_HTTP_AGENT_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/v03_proto.h"
#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

namespace testing_util {

class FakeHttpAgent {
 public:
  enum class Binding { kJsonRpc, kRest, kJsonRpcV03, kRestV03 };

  // Listens on 127.0.0.1:`port` (0 picks one; port() < 0 when it cannot bind). `tenant` is
  // declared in the card's interface.
  explicit FakeHttpAgent(Binding binding, int port = 0, std::string tenant = "")
      : binding_(binding), tenant_(std::move(tenant)) {
    server_.Get("/.well-known/agent-card.json",
                [this](const httplib::Request&, httplib::Response& res) {
                  absl::MutexLock lock(&mu_);
                  res.set_content(card_.empty() ? DefaultCard() : card_, "application/json");
                });
    server_.Post("/jsonrpc", [this](const httplib::Request& req, httplib::Response& res) {
      JsonRpc(req, res);
    });
    server_.Post(R"(/rest(?:/([^/:]+))?/message:(stream|send))",
                 [this](const httplib::Request& req, httplib::Response& res) { Rest(req, res); });
    server_.Post(R"(/rest(?:/[^/:]+)?/tasks/([^/:]+):cancel)",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   res.set_content(ToJson(CancelHeld(req.matches[1])), "application/a2a+json");
                 });
    server_.Get(R"(/rest(?:/[^/:]+)?/tasks/([^/:]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  RecordCall("GetTask", req.matches[1].str());
                  std::optional<::lf::a2a::v1::Task> task = Find(req.matches[1]);
                  if (!task.has_value()) return RestError(res, kNotFound);
                  res.set_content(ToJson(*task), "application/a2a+json");
                });
    server_.Post(R"(/rest(?:/[^/:]+)?/tasks/([^/:]+):subscribe)",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   RecordCall("SubscribeToTask", req.matches[1].str());
                   std::optional<Answer> answer = Resubscription(req.matches[1]);
                   if (!answer.has_value())
                     return RestError(res, Find(req.matches[1]).has_value() ? kEnded : kNotFound);
                   Stream(res, *std::move(answer),
                          [](const StreamResponse& e) { return ToJson(e); });
                 });
    InstallRestV03();
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    if (port_ > 0) thread_ = std::thread([this] { server_.listen_after_bind(); });
  }

  ~FakeHttpAgent() { Stop(); }

  // Ends held streams and stops serving (the port refuses connections afterwards).
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (!thread_.joinable()) return;
    while (!server_.is_running()) absl::SleepFor(absl::Milliseconds(1));
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string base() const { return absl::StrCat("http://127.0.0.1:", port_); }
  std::string card_url() const { return base() + "/.well-known/agent-card.json"; }
  std::string interface_url() const {
    switch (binding_) {
      case Binding::kRest:
        return base() + "/rest";
      case Binding::kRestV03:
        return base() + "/rest03";
      default:
        return base() + "/jsonrpc";
    }
  }

  // Serves `json` as the card from now on ("" for the default one).
  void set_card(std::string json) {
    absl::MutexLock lock(&mu_);
    card_ = std::move(json);
  }

  // The texts of the messages received, in order (one per streaming or unary send).
  std::vector<std::string> texts() {
    absl::MutexLock lock(&mu_);
    return texts_;
  }
  // Every A2A-Version header, tenant (from the params or the path) and cancelled agent task id.
  std::vector<std::string> versions() {
    absl::MutexLock lock(&mu_);
    return versions_;
  }
  std::vector<std::string> tenants() {
    absl::MutexLock lock(&mu_);
    return tenants_;
  }
  std::vector<std::string> cancels() {
    absl::MutexLock lock(&mu_);
    return cancels_;
  }
  // GetTask and SubscribeToTask calls, as "<method> <agent task id>", in order.
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // (kJsonRpcV03) Every call as "<0.3 method> <params JSON>", in order.
  std::vector<std::string> v03_params() {
    absl::MutexLock lock(&mu_);
    return v03_params_;
  }

  // Ends held task `id` COMPLETED, with a "finished" artifact, as if the agent finished on its
  // own: a held stream gets the end; nobody may be listening.
  void Complete(const std::string& id) {
    namespace a2apb = ::lf::a2a::v1;
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;
    a2apb::Artifact* artifact = it->second.add_artifacts();
    artifact->set_artifact_id("finished");
    artifact->add_parts()->set_text("finished");
    it->second.mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
    it->second.mutable_status()->mutable_message()->set_message_id(id + "-finished");
    it->second.mutable_status()->mutable_message()->set_role(a2apb::ROLE_AGENT);
    it->second.mutable_status()->mutable_message()->clear_parts();
    it->second.mutable_status()->mutable_message()->add_parts()->set_text("finished");
    held_.erase(std::remove(held_.begin(), held_.end(), id), held_.end());
  }

  // Forgets every task, as an agent restarted with its tasks in memory.
  void Forget() {
    absl::MutexLock lock(&mu_);
    tasks_.clear();
  }

  std::string DefaultCard() const {
    if (binding_ == Binding::kJsonRpcV03 || binding_ == Binding::kRestV03) {
      return absl::StrCat(
          R"({"name":"fake03","description":"a fake 0.3 agent","version":"1",)",
          R"("protocolVersion":"0.3.0","url":")", interface_url(), R"(","preferredTransport":")",
          binding_ == Binding::kRestV03 ? "HTTP+JSON" : "JSONRPC",
          R"(","capabilities":{"streaming":true},)",
          R"("defaultInputModes":["text"],"defaultOutputModes":["text"],)",
          R"("skills":[{"id":"echo","name":"echo","description":"echoes","tags":[],)",
          R"("security":[{"bearer":[]}]}],)",
          R"("securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},)",
          R"("security":[{"bearer":[]}],"supportsAuthenticatedExtendedCard":false})");
    }
    return absl::StrCat(
        R"({"name":"fake","description":"a fake agent","version":"1","unknownField":{"x":1},)",
        R"("supportedInterfaces":[{"url":")", interface_url(), R"(","protocolBinding":")",
        binding_ == Binding::kJsonRpc ? "JSONRPC" : "HTTP+JSON", R"(","protocolVersion":"1.0")",
        tenant_.empty() ? "" : absl::StrCat(R"(,"tenant":")", tenant_, R"(")"), "}]}");
  }

  static std::string ToJson(const google::protobuf::Message& message) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(message, &json);
    return json;
  }

 private:
  using StreamResponse = ::lf::a2a::v1::StreamResponse;

  enum TaskError { kNotFound, kEnded };

  void RecordCall(absl::string_view method, absl::string_view id) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat(method, " ", id));
  }

  std::optional<::lf::a2a::v1::Task> Find(const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return std::nullopt;
    return it->second;
  }

  static void RestError(httplib::Response& res, TaskError error) {
    if (error == kNotFound) {
      res.status = 404;
      res.set_content(R"({"error":{"code":404,"status":"NOT_FOUND","message":"no such task",)"
                      R"("details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",)"
                      R"("reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}})",
                      "application/a2a+json");
    } else {
      res.status = 400;
      res.set_content(
          R"({"error":{"code":400,"status":"FAILED_PRECONDITION","message":"the task has ended",)"
          R"("details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",)"
          R"("reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}})",
          "application/a2a+json");
    }
  }

  // The answer to one message, as the events of a stream.
  struct Answer {
    std::vector<StreamResponse> events;
    bool hold = false;  // after the events, wait for CancelTask
    std::string agent_task_id;
  };

  // What a subscription to task `id` streams: the task, then (held) its end. None when the
  // agent does not know the task or it has ended.
  std::optional<Answer> Resubscription(const std::string& id);

  Answer AnswerTo(const ::lf::a2a::v1::SendMessageRequest& request) {
    namespace a2apb = ::lf::a2a::v1;
    const a2apb::Message& message = request.message();
    const std::string text = message.parts_size() > 0 ? message.parts(0).text() : "";
    Answer answer;
    {
      absl::MutexLock lock(&mu_);
      answer.agent_task_id = absl::StrCat("agent-task-", ++next_task_);
    }
    StreamResponse task;
    task.mutable_task()->set_id(answer.agent_task_id);
    task.mutable_task()->set_context_id(message.context_id());
    task.mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_SUBMITTED);
    auto status = [&](a2apb::TaskState state, const std::string& said) {
      StreamResponse update;
      a2apb::TaskStatusUpdateEvent* event = update.mutable_status_update();
      event->set_task_id(answer.agent_task_id);
      event->set_context_id(message.context_id());
      event->mutable_status()->set_state(state);
      a2apb::Message* m = event->mutable_status()->mutable_message();
      m->set_message_id(absl::StrCat(answer.agent_task_id, "-", said.size()));
      m->set_role(a2apb::ROLE_AGENT);
      m->add_parts()->set_text(said);
      return update;
    };
    if (text == "hold") {
      answer.events = {task, status(a2apb::TASK_STATE_WORKING, "holding")};
      answer.hold = true;
      return answer;
    }
    StreamResponse artifact;
    a2apb::TaskArtifactUpdateEvent* chunk = artifact.mutable_artifact_update();
    chunk->set_task_id(answer.agent_task_id);
    chunk->set_context_id(message.context_id());
    chunk->mutable_artifact()->set_artifact_id("echo");
    chunk->mutable_artifact()->add_parts()->set_text(text);
    answer.events = {task, artifact, status(a2apb::TASK_STATE_COMPLETED, "done: " + text)};
    return answer;
  }

  // The events of `answer` as one completed Task (a plain, non-streamed answer).
  static StreamResponse AsOneTask(const Answer& answer) {
    StreamResponse one;
    ::lf::a2a::v1::Task* task = one.mutable_task();
    *task = answer.events.front().task();
    for (const StreamResponse& e : answer.events) {
      if (e.has_artifact_update()) *task->add_artifacts() = e.artifact_update().artifact();
      if (e.has_status_update()) *task->mutable_status() = e.status_update().status();
    }
    return one;
  }

  // Keeps the task `answer` leaves behind (held: WORKING until canceled or completed).
  void Keep(const Answer& answer) {
    absl::MutexLock lock(&mu_);
    tasks_[answer.agent_task_id] = AsOneTask(answer).task();
  }

  void Record(const ::lf::a2a::v1::SendMessageRequest& request, const httplib::Request& req,
              const std::string& tenant) {
    absl::MutexLock lock(&mu_);
    const auto& message = request.message();
    texts_.push_back(message.parts_size() > 0 ? message.parts(0).text() : "");
    versions_.push_back(req.get_header_value("A2A-Version"));
    tenants_.push_back(tenant);
  }

  // Streams `answer` as SSE, each event's data made by `frame`.
  void Stream(httplib::Response& res, Answer answer,
              std::function<std::string(const StreamResponse&)> frame) {
    res.set_chunked_content_provider("text/event-stream", [this, answer = std::move(answer), frame](
                                                              size_t, httplib::DataSink& sink) {
      for (const StreamResponse& event : answer.events) {
        const std::string data = absl::StrCat("data: ", frame(event), "\n\n");
        if (!sink.write(data.data(), data.size())) return false;
      }
      if (answer.hold) {
        StreamResponse end;
        {
          absl::MutexLock lock(&mu_);
          if (std::find(held_.begin(), held_.end(), answer.agent_task_id) == held_.end()) {
            held_.push_back(answer.agent_task_id);
          }
          auto released = [this, &answer]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return stopping_ ||
                   std::find(held_.begin(), held_.end(), answer.agent_task_id) == held_.end();
          };
          mu_.Await(absl::Condition(&released));
          if (stopping_) return false;
          // Canceled or completed: the task's end as it is kept.
          const ::lf::a2a::v1::Task& task = tasks_[answer.agent_task_id];
          end.mutable_status_update()->set_task_id(answer.agent_task_id);
          *end.mutable_status_update()->mutable_status() = task.status();
          for (const auto& artifact : task.artifacts()) {
            if (artifact.artifact_id() != "finished") continue;
            StreamResponse chunk;
            chunk.mutable_artifact_update()->set_task_id(answer.agent_task_id);
            *chunk.mutable_artifact_update()->mutable_artifact() = artifact;
            const std::string data = absl::StrCat("data: ", frame(chunk), "\n\n");
            if (!sink.write(data.data(), data.size())) return false;
          }
        }
        const std::string data = absl::StrCat("data: ", frame(end), "\n\n");
        if (!sink.write(data.data(), data.size())) return false;
      }
      sink.done();
      return true;
    });
  }

  // CancelTask: releases a held stream; the task as CANCELED.
  ::lf::a2a::v1::Task CancelHeld(const std::string& id) {
    absl::MutexLock lock(&mu_);
    cancels_.push_back(id);
    held_.erase(std::remove(held_.begin(), held_.end(), id), held_.end());
    ::lf::a2a::v1::Task task;
    task.set_id(id);
    task.mutable_status()->set_state(::lf::a2a::v1::TASK_STATE_CANCELED);
    if (auto it = tasks_.find(id); it != tasks_.end()) *it->second.mutable_status() = task.status();
    return task;
  }

  void JsonRpc(const httplib::Request& req, httplib::Response& res) {
    google::protobuf::Struct body;
    if (!google::protobuf::util::JsonStringToMessage(req.body, &body).ok()) {
      res.status = 400;
      return;
    }
    const auto& fields = body.fields();
    std::string id = "null";
    if (fields.count("id") > 0) id = ToJson(fields.at("id"));
    std::string method = fields.count("method") > 0 ? fields.at("method").string_value() : "";
    std::string params = fields.count("params") > 0 ? ToJson(fields.at("params")) : "{}";
    auto result = [id](const std::string& json) {
      return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id, R"(,"result":)", json, "}");
    };
    auto error = [id](int code, const std::string& message) {
      return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id, R"(,"error":{"code":)", code,
                          R"(,"message":")", message, R"("}})");
    };
    const bool v03 = binding_ == Binding::kJsonRpcV03;
    if (v03) {
      // The 0.3 call read into its 1.0 request, answered by the 1.0 code below in 0.3 JSON.
      namespace v03ns = a2a_protocol::v03;
      const std::optional<v03ns::Method> named = v03ns::MethodNamed(method);
      std::unique_ptr<google::protobuf::Message> request;
      if (named == v03ns::Method::kMessageSend || named == v03ns::Method::kMessageStream) {
        request = std::make_unique<::lf::a2a::v1::SendMessageRequest>();
      } else if (named == v03ns::Method::kTasksGet) {
        request = std::make_unique<::lf::a2a::v1::GetTaskRequest>();
      } else if (named == v03ns::Method::kTasksCancel) {
        request = std::make_unique<::lf::a2a::v1::CancelTaskRequest>();
      } else if (named == v03ns::Method::kTasksResubscribe) {
        request = std::make_unique<::lf::a2a::v1::SubscribeToTaskRequest>();
      } else {
        res.set_content(error(-32601, "method not found"), "application/json");
        return;
      }
      if (!v03ns::RequestFromParams(*named, params, request.get()).ok()) {
        res.set_content(error(-32602, "invalid params"), "application/json");
        return;
      }
      {
        absl::MutexLock lock(&mu_);
        v03_params_.push_back(absl::StrCat(method, " ", params));
      }
      method = std::string(v03ns::ServiceMethodName(*named));
      params = ToJson(*request);
    }
    // A result's JSON in the agent's version.
    auto task_json = [v03](const ::lf::a2a::v1::Task& task) {
      if (!v03) return ToJson(task);
      StreamResponse event;
      *event.mutable_task() = task;
      return a2a_protocol::v03::EventJson(event, /*send_stream=*/true);
    };
    auto event_json = [v03](const StreamResponse& event) {
      return v03 ? a2a_protocol::v03::EventJson(event, /*send_stream=*/true) : ToJson(event);
    };
    if (method == "CancelTask") {
      ::lf::a2a::v1::CancelTaskRequest cancel;
      (void)google::protobuf::util::JsonStringToMessage(params, &cancel);
      res.set_content(result(task_json(CancelHeld(cancel.id()))), "application/json");
      return;
    }
    if (method == "GetTask" || method == "SubscribeToTask") {
      ::lf::a2a::v1::GetTaskRequest which;  // both requests name the task in "id"
      google::protobuf::util::JsonParseOptions lenient;
      lenient.ignore_unknown_fields = true;
      (void)google::protobuf::util::JsonStringToMessage(params, &which, lenient);
      RecordCall(method, which.id());
      std::optional<::lf::a2a::v1::Task> task = Find(which.id());
      if (!task.has_value()) {
        res.set_content(error(-32001, "no such task"), "application/json");
        return;
      }
      if (method == "GetTask") {
        res.set_content(result(task_json(*task)), "application/json");
        return;
      }
      std::optional<Answer> answer = Resubscription(which.id());
      if (!answer.has_value()) {
        res.set_content(error(-32004, "the task has ended"), "application/json");
        return;
      }
      Stream(res, *std::move(answer),
             [result, event_json](const StreamResponse& e) { return result(event_json(e)); });
      return;
    }
    if (method != "SendStreamingMessage" && method != "SendMessage") {
      res.set_content(error(-32601, "method not found"), "application/json");
      return;
    }
    ::lf::a2a::v1::SendMessageRequest request;
    if (!google::protobuf::util::JsonStringToMessage(params, &request).ok()) {
      res.set_content(error(-32602, "invalid params"), "application/json");
      return;
    }
    const std::string text =
        request.message().parts_size() > 0 ? request.message().parts(0).text() : "";
    if (text == "no-stream" && method == "SendStreamingMessage") {
      res.set_content(v03 ? error(-32004, "streaming is not supported")
                          : error(-32601, "SendStreamingMessage is not supported"),
                      "application/json");
      return;
    }
    Record(request, req, request.tenant());
    if (text == "fail") {
      res.set_content(error(-32603, "the agent broke"), "application/json");
      return;
    }
    if (text == "garbage") {
      res.set_content("data: this is not json\n\n", "text/event-stream");
      return;
    }
    Answer answer = AnswerTo(request);
    Keep(answer);
    if (text == "plain" || method == "SendMessage") {
      res.set_content(result(event_json(AsOneTask(answer))), "application/json");
      return;
    }
    Stream(res, std::move(answer),
           [result, event_json](const StreamResponse& e) { return result(event_json(e)); });
  }

  // A2A 0.3's HTTP+JSON below /rest03/v1.
  void InstallRestV03() {
    namespace v03 = a2a_protocol::v03;
    server_.Post(R"(/rest03/v1/message:(stream|send))", [this](const httplib::Request& req,
                                                               httplib::Response& res) {
      ::a2a::v1::SendMessageRequest sent;
      if (!google::protobuf::util::JsonStringToMessage(req.body, &sent).ok()) {
        res.status = 400;
        res.set_content(R"({"message":"bad body"})", "application/json");
        return;
      }
      {
        absl::MutexLock lock(&mu_);
        v03_params_.push_back(absl::StrCat(req.path, " ", req.body));
      }
      const ::lf::a2a::v1::SendMessageRequest request = v03::FromProto(sent, "");
      const std::string text =
          request.message().parts_size() > 0 ? request.message().parts(0).text() : "";
      const bool stream = req.matches[1] == "stream";
      if (text == "no-stream" && stream) {
        res.status = 501;
        res.set_content(R"({"message":"streaming is not supported"})", "application/json");
        return;
      }
      Record(request, req, "");
      if (text == "fail") {
        res.status = 500;
        res.set_content(R"({"code":-32603,"message":"the agent broke"})", "application/json");
        return;
      }
      if (text == "garbage") {
        res.set_content("data: this is not json\n\n", "text/event-stream");
        return;
      }
      Answer answer = AnswerTo(request);
      Keep(answer);
      if (text == "plain" || !stream) {
        res.set_content(ToJson(v03::ToProto(AsOneTask(answer), true)), "application/json");
        return;
      }
      Stream(res, std::move(answer),
             [](const StreamResponse& e) { return ToJson(v03::ToProto(e, true)); });
    });
    server_.Post(R"(/rest03/v1/tasks/([^/:]+):cancel)", [this](const httplib::Request& req,
                                                               httplib::Response& res) {
      res.set_content(ToJson(v03::ToProto(CancelHeld(req.matches[1]))), "application/json");
    });
    server_.Get(R"(/rest03/v1/tasks/([^/:]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  RecordCall("GetTask", req.matches[1].str());
                  {
                    absl::MutexLock lock(&mu_);
                    v03_params_.push_back(req.target);
                  }
                  std::optional<::lf::a2a::v1::Task> task = Find(req.matches[1]);
                  if (!task.has_value()) {
                    res.status = 404;
                    res.set_content(R"({"message":"no such task"})", "application/json");
                    return;
                  }
                  res.set_content(ToJson(v03::ToProto(*task)), "application/json");
                });
    server_.Get(R"(/rest03/v1/tasks/([^/:]+):subscribe)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  RecordCall("SubscribeToTask", req.matches[1].str());
                  std::optional<Answer> answer = Resubscription(req.matches[1]);
                  if (!answer.has_value()) {
                    const bool known = Find(req.matches[1]).has_value();
                    res.status = known ? 400 : 404;
                    res.set_content(known ? R"({"code":-32004,"message":"the task has ended"})"
                                          : R"({"code":-32001,"message":"no such task"})",
                                    "application/json");
                    return;
                  }
                  Stream(res, *std::move(answer),
                         [](const StreamResponse& e) { return ToJson(v03::ToProto(e, false)); });
                });
  }

  void Rest(const httplib::Request& req, httplib::Response& res) {
    ::lf::a2a::v1::SendMessageRequest request;
    if (!google::protobuf::util::JsonStringToMessage(req.body, &request).ok()) {
      res.status = 400;
      res.set_content(R"({"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad body"}})",
                      "application/a2a+json");
      return;
    }
    Record(request, req, req.matches[1]);
    const std::string text =
        request.message().parts_size() > 0 ? request.message().parts(0).text() : "";
    if (text == "fail") {
      res.status = 500;
      res.set_content(
          R"({"error":{"code":500,"status":"INTERNAL","message":"the agent broke","details":[]}})",
          "application/a2a+json");
      return;
    }
    if (text == "garbage") {
      res.set_content("data: this is not json\n\n", "text/event-stream");
      return;
    }
    Answer answer = AnswerTo(request);
    Keep(answer);
    if (text == "plain" || req.matches[2] == "send") {
      res.set_content(ToJson(AsOneTask(answer)), "application/a2a+json");
      return;
    }
    Stream(res, std::move(answer), [](const StreamResponse& e) { return ToJson(e); });
  }

  const Binding binding_;
  const std::string tenant_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string card_ ABSL_GUARDED_BY(mu_);
  int next_task_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> held_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> texts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> versions_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> tenants_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> cancels_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> v03_params_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ::lf::a2a::v1::Task> tasks_ ABSL_GUARDED_BY(mu_);
};

inline std::optional<FakeHttpAgent::Answer> FakeHttpAgent::Resubscription(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  const ::lf::a2a::v1::TaskState state = it->second.status().state();
  if (state != ::lf::a2a::v1::TASK_STATE_WORKING && state != ::lf::a2a::v1::TASK_STATE_SUBMITTED) {
    return std::nullopt;
  }
  Answer answer;
  answer.agent_task_id = id;
  answer.events.emplace_back();
  *answer.events.back().mutable_task() = it->second;
  answer.hold = std::find(held_.begin(), held_.end(), id) != held_.end();
  return answer;
}

}  // namespace testing_util

#endif  // TESTS_FAKE_HTTP_AGENT_H_
