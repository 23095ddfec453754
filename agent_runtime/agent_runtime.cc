#include "agent_runtime/agent_runtime.h"

#include <functional>
#include <utility>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent_runtime/agent_http.h"
#include "common/elastic_threads.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/stream_writer.h"
#include "common/uuid.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/health_check_service_interface.h"

namespace agent_runtime {
namespace {

bool IsTerminal(a2apb::TaskState s) {
  return s == a2apb::TASK_STATE_COMPLETED || s == a2apb::TASK_STATE_FAILED ||
         s == a2apb::TASK_STATE_CANCELED || s == a2apb::TASK_STATE_REJECTED;
}
bool EndsStream(a2apb::TaskState s) {
  return IsTerminal(s) || s == a2apb::TASK_STATE_INPUT_REQUIRED ||
         s == a2apb::TASK_STATE_AUTH_REQUIRED;
}

grpc::Status CheckVersion(const grpc::CallbackServerContext* context) {
  return common::ToGrpcStatus(a2a_protocol::CheckVersion(context->client_metadata(), "agent"));
}

grpc::Status Unsupported(absl::string_view what) {
  return common::ToGrpcStatus(a2a_protocol::UnsupportedOperation(
      absl::StrCat(what,
                   " is not kept by this agent: it stores no tasks; ask the coordinator, which "
                   "does")));
}

}  // namespace

// One request being executed. Receives the logic's events, stamps them, and hands each to the
// sink (a stream or a waiting unary call) until the task stops. (Outside the anonymous namespace:
// AgentServer::Service holds them.)
class Execution : public EventPublisher, public std::enable_shared_from_this<Execution> {
 public:
  // `sink` gets each event and whether it is the last.
  using Sink = std::function<void(const a2apb::StreamResponse&, bool last)>;

  Execution(RequestContext request, Sink sink)
      : request_(std::move(request)), sink_(std::move(sink)) {}

  const RequestContext& request() const { return request_; }

  void Begin() {
    a2apb::StreamResponse first;
    a2apb::Task* task = first.mutable_task();
    task->set_id(request_.task_id);
    task->set_context_id(request_.context_id);
    task->mutable_status()->set_state(a2apb::TASK_STATE_SUBMITTED);
    *task->mutable_status()->mutable_timestamp() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    *task->add_history() = request_.message;
    Emit(first, false);
  }

  void UpdateStatus(a2apb::TaskState state, absl::string_view text) override {
    a2apb::StreamResponse event;
    a2apb::TaskStatusUpdateEvent* update = event.mutable_status_update();
    update->set_task_id(request_.task_id);
    update->set_context_id(request_.context_id);
    update->mutable_status()->set_state(state);
    *update->mutable_status()->mutable_timestamp() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    if (!text.empty()) {
      a2apb::Message* m = update->mutable_status()->mutable_message();
      m->set_message_id(common::NewUuid());
      m->set_role(a2apb::ROLE_AGENT);
      m->set_task_id(request_.task_id);
      m->set_context_id(request_.context_id);
      m->add_parts()->set_text(std::string(text));
    }
    Emit(event, EndsStream(state));
  }

  void AddArtifact(const a2apb::Artifact& artifact, bool append, bool last_chunk) override {
    a2apb::StreamResponse event;
    a2apb::TaskArtifactUpdateEvent* update = event.mutable_artifact_update();
    update->set_task_id(request_.task_id);
    update->set_context_id(request_.context_id);
    *update->mutable_artifact() = artifact;
    if (update->artifact().artifact_id().empty()) {
      update->mutable_artifact()->set_artifact_id(common::NewUuid());
    }
    update->set_append(append);
    update->set_last_chunk(last_chunk);
    Emit(event, false);
  }

  bool cancelled() const override {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  bool WaitCancelled(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&cancelled_), timeout);
    return cancelled_;
  }

  // The agent is going away: the logic is asked to stop, nothing more is published, and the
  // caller's call fails with UNAVAILABLE so it delivers the message again later.
  void Abandon() {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      ended_ = true;
      cancelled_ = true;
    }
    if (on_abandon_) on_abandon_();
  }
  void set_on_abandon(std::function<void()> fn) { on_abandon_ = std::move(fn); }

  // Marks the execution canceled; true when it was still running.
  bool MarkCancelled() {
    absl::MutexLock lock(&mu_);
    if (ended_) return false;
    cancelled_ = true;
    return true;
  }

  // After Execute returned: ends the task when the logic did not.
  void Close() {
    bool ended, cancelled;
    {
      absl::MutexLock lock(&mu_);
      ended = ended_;
      cancelled = cancelled_;
    }
    if (!ended)
      UpdateStatus(cancelled ? a2apb::TASK_STATE_CANCELED : a2apb::TASK_STATE_COMPLETED, "");
  }

  bool ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }

 private:
  void Emit(const a2apb::StreamResponse& event, bool last) {
    absl::MutexLock lock(&emit_mu_);  // keeps the sink's order the publishing order
    {
      absl::MutexLock lock2(&mu_);
      if (ended_) return;
      if (last) ended_ = true;
    }
    sink_(event, last);
  }

  const RequestContext request_;
  const Sink sink_;
  std::function<void()> on_abandon_;  // set before the logic starts
  absl::Mutex emit_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

class AgentServer::Service final : public a2apb::A2AService::CallbackService {
 public:
  Service(AgentExecutor* executor, a2apb::AgentCard card)
      : executor_(executor), card_(std::move(card)) {}

  // Starts executing `message` on a thread of its own while it runs; events go to `sink`.
  absl::StatusOr<std::shared_ptr<Execution>> Launch(const a2apb::Message& message,
                                                    Execution::Sink sink,
                                                    std::function<void()> on_abandon) {
    if (message.parts().empty()) {
      return absl::InvalidArgumentError("message.parts is empty");
    }
    RequestContext request;
    request.task_id = message.task_id().empty() ? common::NewUuid() : message.task_id();
    request.context_id = message.context_id().empty() ? common::NewUuid() : message.context_id();
    request.message = message;
    request.message.set_task_id(request.task_id);
    request.message.set_context_id(request.context_id);
    auto execution = std::make_shared<Execution>(std::move(request), std::move(sink));
    execution->set_on_abandon(std::move(on_abandon));
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::UnavailableError("agent is shutting down");
      running_[execution->request().task_id] = execution;
      ++threads_;
    }
    execution->Begin();
    // An executor may block for any time (a model call; "hold" until cancelled), so each runs on
    // a thread of its own, taken idle from the ones before it when it can be.
    executions_.Run([this, execution] {
      executor_->Execute(execution->request(), *execution);
      execution->Close();
      absl::MutexLock lock(&mu_);
      auto it = running_.find(execution->request().task_id);
      if (it != running_.end() && it->second == execution) running_.erase(it);
      --threads_;
    });
    return execution;
  }

  // Cancels every running execution and waits (bounded) for their threads to end.
  void Stop(absl::Duration grace) {
    std::vector<std::shared_ptr<Execution>> running;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      for (auto& [id, e] : running_) running.push_back(e);
    }
    for (auto& e : running) {
      e->Abandon();
      executor_->Cancel(e->request());
    }
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return threads_ == 0; };
    mu_.AwaitWithTimeout(absl::Condition(&idle), grace);
  }

  grpc::ServerUnaryReactor* SendMessage(grpc::CallbackServerContext* context,
                                        const a2apb::SendMessageRequest* request,
                                        a2apb::SendMessageResponse* response) override;
  grpc::ServerWriteReactor<a2apb::StreamResponse>* SendStreamingMessage(
      grpc::CallbackServerContext* context, const a2apb::SendMessageRequest* request) override;

  grpc::ServerUnaryReactor* CancelTask(grpc::CallbackServerContext* context,
                                       const a2apb::CancelTaskRequest* request,
                                       a2apb::Task* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status s = CheckVersion(context); !s.ok()) {
      reactor->Finish(s);
      return reactor;
    }
    std::shared_ptr<Execution> execution;
    {
      absl::MutexLock lock(&mu_);
      auto it = running_.find(request->id());
      if (it != running_.end()) execution = it->second;
    }
    if (execution == nullptr || !execution->MarkCancelled()) {
      reactor->Finish(common::ToGrpcStatus(
          a2a_protocol::Error(absl::StatusCode::kNotFound, a2a_protocol::kTaskNotFound,
                              absl::StrCat("task ", request->id(), " is not running here"))));
      return reactor;
    }
    executor_->Cancel(execution->request());
    execution->UpdateStatus(a2apb::TASK_STATE_CANCELED, "");
    response->set_id(execution->request().task_id);
    response->set_context_id(execution->request().context_id);
    response->mutable_status()->set_state(a2apb::TASK_STATE_CANCELED);
    *response->mutable_status()->mutable_timestamp() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetTask(grpc::CallbackServerContext* context,
                                    const a2apb::GetTaskRequest*, a2apb::Task*) override {
    return Refuse(context, Unsupported("GetTask"));
  }
  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const a2apb::ListTasksRequest*,
                                      a2apb::ListTasksResponse*) override {
    return Refuse(context, Unsupported("ListTasks"));
  }
  grpc::ServerWriteReactor<a2apb::StreamResponse>* SubscribeToTask(
      grpc::CallbackServerContext* /*context*/, const a2apb::SubscribeToTaskRequest*) override {
    return common::RefuseStream<a2apb::StreamResponse>(Unsupported("SubscribeToTask"));
  }
  grpc::ServerUnaryReactor* CreateTaskPushNotificationConfig(
      grpc::CallbackServerContext* context, const a2apb::TaskPushNotificationConfig*,
      a2apb::TaskPushNotificationConfig*) override {
    return Refuse(context, PushUnsupported());
  }
  grpc::ServerUnaryReactor* GetTaskPushNotificationConfig(
      grpc::CallbackServerContext* context, const a2apb::GetTaskPushNotificationConfigRequest*,
      a2apb::TaskPushNotificationConfig*) override {
    return Refuse(context, PushUnsupported());
  }
  grpc::ServerUnaryReactor* ListTaskPushNotificationConfigs(
      grpc::CallbackServerContext* context, const a2apb::ListTaskPushNotificationConfigsRequest*,
      a2apb::ListTaskPushNotificationConfigsResponse*) override {
    return Refuse(context, PushUnsupported());
  }
  grpc::ServerUnaryReactor* DeleteTaskPushNotificationConfig(
      grpc::CallbackServerContext* context, const a2apb::DeleteTaskPushNotificationConfigRequest*,
      google::protobuf::Empty*) override {
    return Refuse(context, PushUnsupported());
  }
  grpc::ServerUnaryReactor* GetExtendedAgentCard(grpc::CallbackServerContext* context,
                                                 const a2apb::GetExtendedAgentCardRequest*,
                                                 a2apb::AgentCard* response) override {
    *response = card_;
    return Refuse(context, CheckVersion(context));
  }

 private:
  static grpc::Status PushUnsupported() {
    return common::ToGrpcStatus(a2a_protocol::PushNotificationNotSupported(
        "this agent sends no push notifications; the coordinator does"));
  }
  static grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context,
                                          const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  AgentExecutor* executor_;
  const a2apb::AgentCard card_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int threads_ ABSL_GUARDED_BY(mu_) = 0;  // executions whose executor has not returned
  absl::flat_hash_map<std::string, std::shared_ptr<Execution>> running_ ABSL_GUARDED_BY(mu_);
  // Last, so destroyed first: its threads end (joined) while what they touch is still here. Stop
  // has already waited for the executions, so its own grace is short.
  common::ElasticThreads executions_{"agent-exec", absl::Seconds(30), absl::Seconds(1)};
};

namespace {

// Streams one execution's events to the caller, with no bound on the queue: the execution
// publishes a task's few events. The writer (common/stream_writer.h) owns the queue, the writes,
// finishing and the stream's life (until OnDone).
class ExecutionStream final : public common::StreamWriter<a2apb::StreamResponse> {
 public:
  // Queues `event`; the stream ends after the last one.
  void Emit(const a2apb::StreamResponse& event, bool last) {
    Push(event);
    if (last) Close(grpc::Status::OK);
  }
  void set_execution(std::shared_ptr<Execution> e) {
    absl::MutexLock lock(&mu_);
    execution_ = std::move(e);
  }

 private:
  // The caller went away: stop the work it asked for (its coordinator will send it again).
  void OnCancelled() override {
    std::shared_ptr<Execution> execution;
    {
      absl::MutexLock lock(&mu_);
      execution = execution_;
    }
    if (execution != nullptr) execution->MarkCancelled();
  }

  absl::Mutex mu_;
  std::shared_ptr<Execution> execution_ ABSL_GUARDED_BY(mu_);
};

// A unary SendMessage: collects the events into a Task and answers when the task stops.
class UnaryCollector {
 public:
  UnaryCollector(grpc::ServerUnaryReactor* reactor, a2apb::SendMessageResponse* response)
      : reactor_(reactor), response_(response) {}
  void Push(const a2apb::StreamResponse& event, bool last) {
    a2apb::Task* task = response_->mutable_task();
    if (event.has_task()) *task = event.task();
    if (event.has_status_update()) {
      *task->mutable_status() = event.status_update().status();
      if (event.status_update().status().has_message()) {
        *task->add_history() = event.status_update().status().message();
      }
    }
    if (event.has_artifact_update()) *task->add_artifacts() = event.artifact_update().artifact();
    if (last) reactor_->Finish(grpc::Status::OK);
  }

 private:
  grpc::ServerUnaryReactor* reactor_;
  a2apb::SendMessageResponse* response_;
};

}  // namespace

grpc::ServerUnaryReactor* AgentServer::Service::SendMessage(
    grpc::CallbackServerContext* context, const a2apb::SendMessageRequest* request,
    a2apb::SendMessageResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status s = CheckVersion(context); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  auto collector = std::make_shared<UnaryCollector>(reactor, response);
  absl::StatusOr<std::shared_ptr<Execution>> execution = Launch(
      request->message(),
      [collector](const a2apb::StreamResponse& e, bool last) { collector->Push(e, last); },
      [reactor] {
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down"));
      });
  if (!execution.ok()) {
    reactor->Finish(common::ToGrpcStatus(execution.status()));
  }
  return reactor;
}

grpc::ServerWriteReactor<a2apb::StreamResponse>* AgentServer::Service::SendStreamingMessage(
    grpc::CallbackServerContext* context, const a2apb::SendMessageRequest* request) {
  std::shared_ptr<ExecutionStream> stream = common::MakeStream<ExecutionStream>();
  if (grpc::Status s = CheckVersion(context); !s.ok()) {
    stream->Abort(s);
    return stream.get();
  }
  std::weak_ptr<ExecutionStream> weak = stream;
  absl::StatusOr<std::shared_ptr<Execution>> execution = Launch(
      request->message(),
      [weak](const a2apb::StreamResponse& e, bool last) {
        if (auto s = weak.lock()) s->Emit(e, last);
      },
      [weak] {
        if (auto s = weak.lock()) {
          s->Abort(grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down"));
        }
      });
  if (!execution.ok()) {
    stream->Abort(common::ToGrpcStatus(execution.status()));
  } else {
    stream->set_execution(*execution);
  }
  return stream.get();
}

absl::StatusOr<std::unique_ptr<AgentServer>> AgentServer::Start(RuntimeOptions options,
                                                                AgentExecutor* executor) {
  std::unique_ptr<AgentServer> server(new AgentServer());
  a2apb::AgentCard card = options.card;
  if (card.name().empty()) card.set_name(options.name);
  server->service_ = std::make_unique<Service>(executor, card);
  // grpc.health.v1.Health, SERVING while the agent serves: `coordctl --target <agent> health`
  // is its container health check.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  server->endpoint_ = absl::StrCat(options.advertise_host, ":", server->port_);
  common::LogInfo({{"agent", options.name}}, "agent %s listening on %s", options.name,
                  server->endpoint_);
  if (!options.http_listen.empty()) {
    // Over loopback TCP, not gRPC's in-process transport: with gRPC 1.51 a stream's last event,
    // written in one batch with its status, did not reach an in-process reader (the HTTP stream
    // then ended without its final status update).
    const std::string listen_host = options.listen.substr(0, options.listen.rfind(':'));
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    absl::StatusOr<std::unique_ptr<AgentHttp>> http =
        AgentHttp::Start(options.http_listen, options.card_url, card,
                         grpc::CreateCustomChannel(
                             common::LocalDialTarget(absl::StrCat(listen_host, ":", server->port_)),
                             grpc::InsecureChannelCredentials(), args));
    if (!http.ok()) {
      server->Shutdown(absl::ZeroDuration());
      return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", options.http_listen, ": ",
                                                 http.status().message()));
    }
    server->http_ = *std::move(http);
    common::LogInfo({{"agent", options.name}},
                    "agent %s serves its card and A2A over HTTP on port %d (--host/--port %s)",
                    options.name, server->http_->port(), options.http_listen);
  }
  if (options.coordinator.empty()) return server;
  if (absl::Status registered = server->Register(options, card); !registered.ok()) {
    server->Shutdown(absl::ZeroDuration());
    return registered;
  }
  return server;
}

absl::Status AgentServer::Register(const RuntimeOptions& options, const a2apb::AgentCard& card) {
  auto stub = coordinator::v1::AgentRegistry::NewStub(
      common::MakeChannel(options.coordinator, options.credentials));
  coordinator::v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name(options.name);
  request.mutable_agent()->set_endpoint(endpoint_);
  *request.mutable_agent()->mutable_card() = card;
  absl::Duration backoff = absl::Milliseconds(100);
  grpc::Status status;
  for (int attempt = 0; attempt < std::max(options.register_attempts, 1); ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoNanoseconds(options.register_timeout));
    coordinator::v1::Agent reply;
    status = stub->RegisterAgent(&context, request, &reply);
    if (status.ok()) {
      common::LogInfo({{"agent", options.name}}, "registered with the coordinator at %s as %s",
                      options.coordinator, options.name);
      return absl::OkStatus();
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      break;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  return absl::UnavailableError(absl::StrCat("cannot register with the coordinator at ",
                                             options.coordinator, ": ", status.error_message()));
}

int AgentServer::http_port() const { return http_ == nullptr ? 0 : http_->port(); }

AgentServer::~AgentServer() { Shutdown(); }

void AgentServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  service_->Stop(grace);
  // The executions ended, and with them the HTTP port's calls and streams: it stops before the
  // gRPC server its calls go to.
  if (http_ != nullptr) http_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  server_->Wait();
}

void AgentServer::Wait() { server_->Wait(); }

}  // namespace agent_runtime
