#include "coordinator/store/a2a/push_config.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/validation.h"

namespace coordinator {
namespace {

constexpr size_t kMaxUrlBytes = 2048;

}  // namespace

absl::StatusOr<common::HttpUrl> CheckWebhookUrl(absl::string_view url,
                                                const A2AStoreOptions& options) {
  ASSIGN_OR_RETURN(common::HttpUrl parsed, common::ParseHttpUrl(url));
  RETURN_IF_ERROR(options.outbound_allow.Check(url, "outbound_allow_hosts"));
  return parsed;
}

absl::Status ValidatePushVersion(absl::string_view version) {
  if (version == kPushVersion10 || version == kPushVersion03) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("push config version \"", version, "\" is not 0.3 or 1.0"));
}

absl::Status ValidatePushConfig(const a2apb::TaskPushNotificationConfig& config,
                                const Limits& limits, const A2AStoreOptions& options) {
  RETURN_IF_ERROR(common::ValidateOptionalId("id", config.id()));
  if (config.url().empty()) return absl::InvalidArgumentError("push config url is required");
  RETURN_IF_ERROR(common::ValidateSize("url", config.url(), kMaxUrlBytes));
  if (!absl::StartsWith(config.url(), "http://") && !absl::StartsWith(config.url(), "https://")) {
    return absl::InvalidArgumentError("push config url must be an http:// or https:// URL");
  }
  if (absl::Status allowed = CheckWebhookUrl(config.url(), options).status(); !allowed.ok()) {
    return absl::Status(allowed.code(), absl::StrCat("push config url: ", allowed.message()));
  }
  RETURN_IF_ERROR(
      common::ValidateSize("token", config.token(), limits.max_field_bytes, "max_field_bytes"));
  RETURN_IF_ERROR(common::ValidateSize("authentication.credentials",
                                       config.authentication().credentials(),
                                       limits.max_field_bytes, "max_field_bytes"));
  return absl::OkStatus();
}

}  // namespace coordinator
