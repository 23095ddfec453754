// gRPC face of the A2A gateway: lf.a2a.v1.A2AService. A request's `tenant` names the agent it
// is for; a message that starts a task without one goes to the default agent (ResolveTenant).
// Handlers check the a2a-version metadata, do their storage work on the work pool (reads and
// push configs acknowledged once durable, coordinator/rpc/unary_handler.h), and
// never wait on an agent: sends are stored and queued (the gateway delivers them), blocking
// sends and streams wake on the task notifier, reads come from the store.
#ifndef COORDINATOR_A2A_SERVICE_H_
#define COORDINATOR_A2A_SERVICE_H_

#include <atomic>
#include <string>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/synchronization/mutex.h"
#include "common/thread_pool.h"
#include "coordinator/a2a/cards.h"
#include "coordinator/a2a/gateway.h"
#include "coordinator/a2a/tenant_routing.h"
#include "coordinator/rpc/stream_slots.h"
#include "coordinator/rpc/unary_handler.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "coordinator/store/a2a/push.h"
#include "coordinator/store/a2a/tasks.h"

namespace coordinator {

// The coordinator's a2a-version check (a2a_protocol::CheckVersion): OK when the metadata is
// absent or 1.0; otherwise VERSION_NOT_SUPPORTED.
[[nodiscard]] absl::Status CheckA2AVersion(const grpc::CallbackServerContext* context);

class A2AServiceImpl final : public a2apb::A2AService::CallbackService {
 public:
  A2AServiceImpl(A2ATasks* tasks, A2APush* push, AgentRegistryStore* agents, A2AGateway* gateway,
                 CallRunner* calls)
      : tasks_(tasks), push_(push), agents_(agents), gateway_(gateway), calls_(calls) {}

  // Where the coordinator is reached, for the card GetExtendedAgentCard returns: known only once
  // the server has bound its ports.
  void set_card_addresses(CardAddresses addresses) {
    absl::MutexLock lock(&mu_);
    card_addresses_ = std::move(addresses);
  }
  CardAddresses card_addresses() {
    absl::MutexLock lock(&mu_);
    return card_addresses_;
  }
  // Bounds on the task streams (SendStreamingMessage, SubscribeToTask): `slots` counts them
  // against --max_streams (nullptr: no bound), and a stream holding more than `queue_limit`
  // unsent events is closed (--stream_queue_limit). Set before the server starts.
  void set_stream_limits(StreamSlots* slots, size_t queue_limit) {
    stream_slots_ = slots;
    stream_queue_limit_ = queue_limit;
  }
  StreamSlots* stream_slots() { return stream_slots_; }
  size_t stream_queue_limit() const { return stream_queue_limit_; }
  // The agent a request without a tenant goes to (--default_agent; default empty: the only
  // registered agent, when exactly one is). Set before the server starts.
  void set_default_agent(std::string name) { default_agent_ = std::move(name); }
  const std::string& default_agent() const { return default_agent_; }

  // The agent a request for a new task goes to, given the request's `tenant` (empty: none):
  // coordinator::ResolveTenant (tenant_routing.h) with this service's default agent. Every
  // binding calls it where a request needs an agent (a message that starts a task); requests
  // about an existing task do not: the task belongs to its agent, and an empty tenant there
  // means "whichever agent owns it".
  [[nodiscard]] absl::StatusOr<std::string> ResolveTenant(absl::string_view tenant) {
    return coordinator::ResolveTenant(agents_, default_agent_, tenant);
  }

  grpc::ServerUnaryReactor* SendMessage(grpc::CallbackServerContext* context,
                                        const a2apb::SendMessageRequest* request,
                                        a2apb::SendMessageResponse* response) override;
  grpc::ServerWriteReactor<a2apb::StreamResponse>* SendStreamingMessage(
      grpc::CallbackServerContext* context, const a2apb::SendMessageRequest* request) override;
  grpc::ServerUnaryReactor* GetTask(grpc::CallbackServerContext* context,
                                    const a2apb::GetTaskRequest* request,
                                    a2apb::Task* response) override;
  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const a2apb::ListTasksRequest* request,
                                      a2apb::ListTasksResponse* response) override;
  grpc::ServerUnaryReactor* CancelTask(grpc::CallbackServerContext* context,
                                       const a2apb::CancelTaskRequest* request,
                                       a2apb::Task* response) override;
  grpc::ServerWriteReactor<a2apb::StreamResponse>* SubscribeToTask(
      grpc::CallbackServerContext* context, const a2apb::SubscribeToTaskRequest* request) override;
  grpc::ServerUnaryReactor* CreateTaskPushNotificationConfig(
      grpc::CallbackServerContext* context, const a2apb::TaskPushNotificationConfig* request,
      a2apb::TaskPushNotificationConfig* response) override;
  grpc::ServerUnaryReactor* GetTaskPushNotificationConfig(
      grpc::CallbackServerContext* context,
      const a2apb::GetTaskPushNotificationConfigRequest* request,
      a2apb::TaskPushNotificationConfig* response) override;
  grpc::ServerUnaryReactor* ListTaskPushNotificationConfigs(
      grpc::CallbackServerContext* context,
      const a2apb::ListTaskPushNotificationConfigsRequest* request,
      a2apb::ListTaskPushNotificationConfigsResponse* response) override;
  grpc::ServerUnaryReactor* GetExtendedAgentCard(grpc::CallbackServerContext* context,
                                                 const a2apb::GetExtendedAgentCardRequest* request,
                                                 a2apb::AgentCard* response) override;
  grpc::ServerUnaryReactor* DeleteTaskPushNotificationConfig(
      grpc::CallbackServerContext* context,
      const a2apb::DeleteTaskPushNotificationConfigRequest* request,
      google::protobuf::Empty* response) override;

  // Stores a client's message and queues its delivery (shared by both send calls). The caller
  // then hands the change to gateway()->Accepted, which dispatches the delivery, once the change
  // is durable (at once when this ran outside a DurabilityScope, which waited for it).
  [[nodiscard]] absl::StatusOr<A2ATasks::Change> Accept(const grpc::CallbackServerContext* context,
                                                        const a2apb::SendMessageRequest& request);

  A2ATasks* tasks() { return tasks_; }
  A2AGateway* gateway() { return gateway_; }
  common::ThreadPool* pool() { return calls_->pool(); }
  CallRunner* calls() { return calls_; }

 private:
  A2ATasks* tasks_;                      // not owned
  A2APush* push_;                        // not owned
  AgentRegistryStore* agents_;           // not owned
  A2AGateway* gateway_;                  // not owned
  CallRunner* calls_;                    // not owned
  StreamSlots* stream_slots_ = nullptr;  // not owned
  size_t stream_queue_limit_ = kDefaultStreamQueueLimit;
  std::string default_agent_;
  absl::Mutex mu_;
  CardAddresses card_addresses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_SERVICE_H_
