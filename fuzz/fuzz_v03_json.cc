// libFuzzer harness for A2A 0.3's JSON (a2a_protocol/v03_json.h): whatever bytes arrive as the
// params of a 0.3 JSON-RPC method must be read or refused with INVALID_ARGUMENT, never crash.
// Invariant: a message that was read, written back as 0.3 JSON and read again is the same 1.0
// message (nothing a 0.3 client sent is lost or changed on its way through the store and out).
// The same bytes are also a 0.3 agent's answer (EventFromJson: read or INVALID_ARGUMENT; an
// event read is written back and reads as the same event) and a 0.3 card (CardFromJson: read,
// INVALID_ARGUMENT, or FAILED_PRECONDITION for another protocol version).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/v03_json.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

namespace v03 = a2a_protocol::v03;
namespace a2apb = ::lf::a2a::v1;

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "v03 json: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckRefusal(const absl::Status& status) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    Fail("params were refused with a code other than INVALID_ARGUMENT", status.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view params(reinterpret_cast<const char*>(data), size);

  a2apb::SendMessageRequest send;
  const absl::Status read = v03::RequestFromParams(v03::Method::kMessageSend, params, &send);
  CheckRefusal(read);
  if (read.ok()) {
    // Round trip: 1.0 -> 0.3 JSON -> 1.0.
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(v03::MessageToJson(send.message()), &json);
    google::protobuf::Value again_json;
    if (!google::protobuf::util::JsonStringToMessage(json, &again_json).ok()) {
      Fail("a written message is not JSON", json);
    }
    a2apb::Message again;
    const absl::Status reread = v03::MessageFromJson(again_json, "m", &again);
    if (!reread.ok()) Fail("a written message does not read back", reread.ToString() + "\n" + json);
    if (!google::protobuf::util::MessageDifferencer::Equals(send.message(), again)) {
      Fail("a message changed on its round trip",
           send.message().DebugString() + "\n---\n" + again.DebugString());
    }
    a2apb::StreamResponse event;
    *event.mutable_message() = send.message();
    (void)v03::EventJson(event, true);
  }
  a2apb::GetTaskRequest get;
  CheckRefusal(v03::RequestFromParams(v03::Method::kTasksGet, params, &get));
  a2apb::CancelTaskRequest cancel;
  CheckRefusal(v03::RequestFromParams(v03::Method::kTasksCancel, params, &cancel));
  a2apb::TaskPushNotificationConfig set;
  const absl::Status set_read = v03::RequestFromParams(v03::Method::kPushConfigSet, params, &set);
  CheckRefusal(set_read);
  if (set_read.ok()) (void)v03::PushConfigToJson(set);
  a2apb::GetTaskPushNotificationConfigRequest push_get;
  CheckRefusal(v03::RequestFromParams(v03::Method::kPushConfigGet, params, &push_get));
  a2apb::DeleteTaskPushNotificationConfigRequest push_delete;
  CheckRefusal(v03::RequestFromParams(v03::Method::kPushConfigDelete, params, &push_delete));

  absl::StatusOr<a2apb::StreamResponse> answer = v03::EventFromJson(params);
  CheckRefusal(answer.status());
  if (answer.ok()) {
    const std::string written = v03::EventJson(*answer, /*send_stream=*/false);
    absl::StatusOr<a2apb::StreamResponse> again = v03::EventFromJson(written);
    if (!again.ok()) Fail("a written event does not read back", again.status().ToString());
    if (!google::protobuf::util::MessageDifferencer::Equals(*answer, *again)) {
      Fail("an event changed on its round trip",
           answer->DebugString() + "\n---\n" + again->DebugString());
    }
  }
  google::protobuf::Value card;
  if (google::protobuf::util::JsonStringToMessage(std::string(params), &card).ok() &&
      card.has_struct_value() && v03::IsV03Card(card.struct_value())) {
    const absl::Status read_card = v03::CardFromJson(card.struct_value()).status();
    if (!read_card.ok() && read_card.code() != absl::StatusCode::kInvalidArgument &&
        read_card.code() != absl::StatusCode::kFailedPrecondition) {
      Fail("a card was refused with an unexpected code", read_card.ToString());
    }
  }
  return 0;
}
