// What a push config may be: the bounds of the configs and of the webhook calls made for them,
// and the check a config passes before it is stored, whether it comes alone (A2APush) or with a
// message (A2ATasks::AcceptMessage).
#ifndef COORDINATOR_STORE_A2A_PUSH_CONFIG_H_
#define COORDINATOR_STORE_A2A_PUSH_CONFIG_H_

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/url_allow_list.h"
#include "coordinator/store/records/limits.h"

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

// Bounds of the push configs and the webhook calls.
struct A2AStoreOptions {
  // Push configs one task may have (default 16).
  int max_push_configs_per_task = 16;
  // Attempts at one webhook call before it is recorded as failed (default 5).
  int push_max_attempts = 5;
  // Delay before the second webhook attempt; doubles each time (default 1s, capped at 60s).
  absl::Duration push_initial_backoff = absl::Seconds(1);
  absl::Duration push_max_backoff = absl::Seconds(60);
  // Hosts webhook URLs may name (--outbound_allow_hosts; default loopback only). Checked when a
  // push config is stored and again before every POST.
  common::HostAllowList outbound_allow;
};

// The A2A version a push config was created in, which decides the body of its webhook calls:
// 1.0 posts the StreamResponse of each status update, 0.3 the Task in 0.3's JSON.
inline constexpr char kPushVersion10[] = "";
inline constexpr char kPushVersion03[] = "0.3";
// INVALID_ARGUMENT for a version other than those two.
[[nodiscard]] absl::Status ValidatePushVersion(absl::string_view version);

// INVALID_ARGUMENT or PERMISSION_DENIED when `config` may not be stored: a bad id, a URL that
// is not http(s) or names a host `options` does not allow, a token or credentials over
// `limits`. Shared by CreatePushConfig and a message that carries a config (AcceptMessage).
[[nodiscard]] absl::Status ValidatePushConfig(const a2apb::TaskPushNotificationConfig& config,
                                              const Limits& limits, const A2AStoreOptions& options);

// The parsed webhook URL when `options` allows its host; checked again before every POST.
[[nodiscard]] absl::StatusOr<common::HttpUrl> CheckWebhookUrl(absl::string_view url,
                                                              const A2AStoreOptions& options);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_PUSH_CONFIG_H_
