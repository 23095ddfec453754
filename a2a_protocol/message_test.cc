// A2A Message checks: what is refused, with which code, and the size limit naming its flag.
#include "a2a_protocol/message.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/validation.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace a2a_protocol {
namespace {

namespace a2apb = ::lf::a2a::v1;

constexpr size_t kLimit = 1 << 20;

a2apb::Message UserText(const std::string& text) {
  a2apb::Message message;
  message.set_message_id("m1");
  message.set_role(a2apb::ROLE_USER);
  message.add_parts()->set_text(text);
  return message;
}

TEST(ValidateMessageTest, AcceptsAUserOrAgentMessageWithContent) {
  EXPECT_OK(ValidateMessage(UserText("hi"), kLimit));
  a2apb::Message agent = UserText("hi");
  agent.set_role(a2apb::ROLE_AGENT);
  agent.set_task_id("t1");
  agent.set_context_id("c1");
  agent.add_parts()->set_url("https://example.org/x");
  EXPECT_OK(ValidateMessage(agent, kLimit));
}

TEST(ValidateMessageTest, RefusesMissingOrBadIds) {
  a2apb::Message no_id = UserText("x");
  no_id.clear_message_id();
  absl::Status s = ValidateMessage(no_id, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "message.message_id")) << s;

  a2apb::Message long_task = UserText("x");
  long_task.set_task_id(std::string(common::kMaxIdBytes + 1, 't'));
  s = ValidateMessage(long_task, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "message.task_id")) << s;

  a2apb::Message control = UserText("x");
  control.set_context_id("c\n1");
  s = ValidateMessage(control, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "message.context_id")) << s;
}

TEST(ValidateMessageTest, RefusesAnUnspecifiedRole) {
  a2apb::Message message = UserText("x");
  message.set_role(a2apb::ROLE_UNSPECIFIED);
  const absl::Status s = ValidateMessage(message, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "message.role must be ROLE_USER or ROLE_AGENT");
}

TEST(ValidateMessageTest, RefusesNoPartsAndAnEmptyPart) {
  a2apb::Message no_parts = UserText("x");
  no_parts.clear_parts();
  absl::Status s = ValidateMessage(no_parts, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "message.parts is empty: a message needs at least one part");

  a2apb::Message empty_part = UserText("x");
  empty_part.add_parts();
  s = ValidateMessage(empty_part, kLimit);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "message.parts[1] has no content (text, raw, url or data)");
}

TEST(ValidateMessageTest, TheSizeLimitIsInclusiveAndNamesItsFlag) {
  const a2apb::Message message = UserText(std::string(1000, 'x'));
  const size_t size = message.ByteSizeLong();
  EXPECT_OK(ValidateMessage(message, size));
  absl::Status s = ValidateMessage(message, size - 1, "max_message_bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), absl::StrCat("message is ", size, " bytes; the limit is ", size - 1,
                                      " bytes (--max_message_bytes)"));
  s = ValidateMessage(message, size - 1);
  EXPECT_EQ(s.message(),
            absl::StrCat("message is ", size, " bytes; the limit is ", size - 1, " bytes"));
}

}  // namespace
}  // namespace a2a_protocol
