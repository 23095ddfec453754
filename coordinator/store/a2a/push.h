// The push-notification part of the A2A store: the webhook configs of a task, the queue of
// webhook calls (one per status change and config, queued in the transaction of the change,
// see records.h) and the log of finished calls. Knows nothing of gRPC or HTTP: the gateway
// makes the calls and records each attempt here. It publishes nothing: no watcher reads configs
// or attempts, and the webhook loop is woken by the task change that queued the calls.
#ifndef COORDINATOR_STORE_A2A_PUSH_H_
#define COORDINATOR_STORE_A2A_PUSH_H_

#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/store/a2a/push_config.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "storage/store.h"

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

class A2APush {
 public:
  A2APush(storage::Store* store, Limits limits, A2AStoreOptions options = {})
      : store_(store), limits_(limits), options_(options) {}

  // --- Push-notification configs. ---
  // `protocol_version`: the A2A version of the request that creates the config
  // (push_config.h), which decides the body of its webhook calls.
  [[nodiscard]] absl::StatusOr<a2apb::TaskPushNotificationConfig> CreatePushConfig(
      const a2apb::TaskPushNotificationConfig& config,
      absl::string_view protocol_version = kPushVersion10);
  [[nodiscard]] absl::StatusOr<a2apb::TaskPushNotificationConfig> GetPushConfig(
      absl::string_view tenant, absl::string_view task_id, absl::string_view id);
  [[nodiscard]] absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> ListPushConfigs(
      const a2apb::ListTaskPushNotificationConfigsRequest& request);
  // Deletes config `id` of the task. Idempotent, as A2A requires: OK when the task has no such
  // config (deleted before, or never created). TASK_NOT_FOUND when the task does not exist or
  // `tenant` is set and does not own it; INVALID_ARGUMENT for a malformed id.
  [[nodiscard]] absl::Status DeletePushConfig(absl::string_view tenant, absl::string_view task_id,
                                              absl::string_view id);

  // --- The webhook queue. ---
  [[nodiscard]] absl::StatusOr<std::vector<v1::PushDelivery>> PendingPushes(int max);
  // Records one attempt at `push`. Delivered, or out of attempts: the record moves to the task's
  // push log with every attempt. Otherwise it stays queued with its next attempt time.
  // `give_up` ends the call at once, whatever the attempts left (a refused host).
  [[nodiscard]] absl::Status RecordPushAttempt(const v1::PushDelivery& push,
                                               const v1::PushAttempt& attempt, bool delivered,
                                               bool give_up = false);
  // The parsed `url` when a webhook may call it; INVALID_ARGUMENT when it does not parse,
  // PERMISSION_DENIED (naming --outbound_allow_hosts) when its host is not allowed.
  [[nodiscard]] absl::StatusOr<common::HttpUrl> AllowedWebhookUrl(absl::string_view url) const;
  // The finished webhook calls of a task, oldest event first.
  [[nodiscard]] absl::StatusOr<std::vector<v1::PushDelivery>> PushLog(absl::string_view task_id);

 private:
  storage::Store* store_;  // not owned
  const Limits limits_;
  const A2AStoreOptions options_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_PUSH_H_
