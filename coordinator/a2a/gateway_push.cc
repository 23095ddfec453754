// The gateway's webhook loop: posts the queued calls of push configs (A2APush's queue), each in
// the A2A version its config was created in, and records every attempt.
#include <string>
#include <utility>
#include <vector>

#include "a2a_http/http.h"
#include "a2a_protocol/v03_json.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/a2a/gateway.h"
#include "coordinator/store/records/time_util.h"
#include "google/protobuf/util/json_util.h"

namespace coordinator {

void A2AGateway::PushLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!active_) return;
      push_kicked_ = false;
    }
    absl::Time wake = absl::Now() + kIdleWake;
    absl::StatusOr<std::vector<v1::PushDelivery>> pending = push_->PendingPushes(kScanBatch);
    if (!pending.ok()) {
      LOG_ERROR("cannot read the webhook queue: %s", pending.status().message());
    } else {
      for (const v1::PushDelivery& push : *pending) {
        {
          absl::MutexLock lock(&mu_);
          if (!active_) return;
        }
        const absl::Time due = FromProtoTime(push.next_attempt_time());
        if (due > absl::Now()) {
          wake = std::min(wake, due);
          continue;
        }
        SendPush(push);
        wake = absl::Now();  // look again: the call may have been rescheduled or more queued
      }
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return push_kicked_ || !active_; };
    mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
  }
}

void A2AGateway::SendPush(const v1::PushDelivery& push) {
  // Checked again at send time: a config stored before --outbound_allow_hosts changed is not
  // called, and the call is recorded as failed at once (no retry would help).
  absl::StatusOr<common::HttpUrl> url = push_->AllowedWebhookUrl(push.config().url());
  if (!url.ok()) {
    LOG_WARN("task %s: webhook not called: %s", push.task_id(), url.status().message());
    v1::PushAttempt refused;
    *refused.mutable_time() = ToProtoTime(absl::Now());
    refused.set_error(absl::StrCat("not called: ", url.status().message()));
    absl::Status s = push_->RecordPushAttempt(push, refused, /*delivered=*/false,
                                              /*give_up=*/true);
    if (!s.ok()) {
      LOG_ERROR("task %s: cannot record a webhook attempt: %s", push.task_id(), s.message());
    }
    return;
  }
  // What was checked is what is called: the parsed scheme, host and port.
  const std::string target = absl::StrCat(url->scheme, "://", url->HostPort(),
                                          absl::StartsWith(url->path, "/") ? "" : "/", url->path);
  // The body in the version the config was created in: 1.0's StreamResponse, or 0.3's Task.
  const bool v03 = push.protocol_version() == kPushVersion03;
  std::string body;
  if (v03) {
    (void)google::protobuf::util::MessageToJsonString(
        a2a_protocol::v03::TaskToJson(push.payload().task()), &body);
  } else {
    (void)google::protobuf::util::MessageToJsonString(push.payload(), &body);
  }
  std::vector<std::pair<std::string, std::string>> headers;
  if (!push.config().token().empty()) {
    headers.emplace_back("X-A2A-Notification-Token", push.config().token());
  }
  if (!push.config().authentication().scheme().empty()) {
    headers.emplace_back("Authorization",
                         absl::StrCat(push.config().authentication().scheme(), " ",
                                      push.config().authentication().credentials()));
  }
  a2a_http::HttpPostResult result =
      a2a_http::HttpPost(target, body, v03 ? "application/json" : "application/a2a+json", headers,
                         options_.push_timeout);
  v1::PushAttempt attempt;
  *attempt.mutable_time() = ToProtoTime(absl::Now());
  attempt.set_http_status(result.status);
  attempt.set_error(result.error);
  const bool delivered = result.status >= 200 && result.status < 300;
  if (!delivered && result.error.empty()) {
    attempt.set_error(absl::StrCat("HTTP ", result.status));
  }
  absl::Status s = push_->RecordPushAttempt(push, attempt, delivered);
  if (!s.ok())
    LOG_ERROR("task %s: cannot record a webhook attempt: %s", push.task_id(), s.message());
}

}  // namespace coordinator
