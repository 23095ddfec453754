// Unit tests of the task part of the A2A store: versions, the event log, bursts, history_length,
// ListTasks paging and filters, local cancel, reopening. Each test opens its own database.
#include "coordinator/store/a2a/tasks.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "a2a_protocol/errors.h"
#include "absl/time/clock.h"
#include "coordinator/store/a2a/store_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

using A2ATasksTest = A2AStoreFixture;

TEST_F(A2ATasksTest, AcceptCreatesSubmittedTaskWithHistoryEventAndDelivery) {
  absl::StatusOr<A2ATasks::Change> change =
      tasks_->AcceptMessage("echo", UserText("hello", "", "ctx-1"));
  ASSERT_OK(change);
  const v1::StoredTask& h = change->header;
  EXPECT_FALSE(h.task().id().empty());
  EXPECT_EQ(h.task().context_id(), "ctx-1");
  EXPECT_EQ(h.tenant(), "echo");
  EXPECT_EQ(h.task().status().state(), a2apb::TASK_STATE_SUBMITTED);
  EXPECT_EQ(h.version(), 1);
  EXPECT_EQ(h.history_count(), 1);
  EXPECT_EQ(h.last_event_seq(), 1);
  ASSERT_EQ(change->events.size(), 1u);
  EXPECT_TRUE(change->events[0].event().has_status_update());

  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("echo", h.task().id(), std::nullopt);
  ASSERT_OK(task);
  ASSERT_EQ(task->history_size(), 1);
  EXPECT_EQ(task->history(0).parts(0).text(), "hello");
  EXPECT_EQ(task->history(0).task_id(), h.task().id());

  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].task_id(), h.task().id());
  EXPECT_EQ((*pending)[0].history_seq(), 1);
}

// A client that lost the answer to its send (the coordinator died, the connection broke) sends
// the same message again: it gets the task the first send made, and nothing is stored or queued
// twice, whatever happened to the task meanwhile.
TEST_F(A2ATasksTest, TheSameMessageSentAgainIsAnsweredWithTheTaskItMade) {
  const a2apb::Message hello = UserText("hello");
  absl::StatusOr<A2ATasks::Change> first = tasks_->AcceptMessage("echo", hello);
  ASSERT_OK(first);
  EXPECT_FALSE(first->repeated);
  EXPECT_EQ(first->sent_seq, 1);
  const std::string id = first->header.task().id();
  absl::StatusOr<A2ATasks::Change> again = tasks_->AcceptMessage("echo", hello);
  ASSERT_OK(again);
  EXPECT_TRUE(again->repeated);
  EXPECT_EQ(again->header.task().id(), id);
  EXPECT_EQ(again->header.task().context_id(), first->header.task().context_id());
  EXPECT_EQ(again->sent_seq, 1);
  EXPECT_EQ(again->queued_delivery_seq, 0);
  EXPECT_TRUE(again->events.empty());
  EXPECT_EQ(again->header.version(), first->header.version());
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  EXPECT_EQ(pending->size(), 1u);
  // The context the first send was given, named this time: still the same message.
  a2apb::Message named = hello;
  named.set_context_id(first->header.task().context_id());
  absl::StatusOr<A2ATasks::Change> with_context = tasks_->AcceptMessage("echo", named);
  ASSERT_OK(with_context);
  EXPECT_EQ(with_context->header.task().id(), id);

  // Continued, then ended: the newest message and the first are each still a repeat.
  const a2apb::Message more = UserText("more", id);
  ASSERT_OK(tasks_->AcceptMessage("echo", more));
  absl::StatusOr<A2ATasks::Change> more_again = tasks_->AcceptMessage("echo", more);
  ASSERT_OK(more_again);
  EXPECT_TRUE(more_again->repeated);
  EXPECT_EQ(more_again->sent_seq, 2);
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_COMPLETED, "done")));
  absl::StatusOr<A2ATasks::Change> late = tasks_->AcceptMessage("echo", hello);
  ASSERT_OK(late);
  EXPECT_TRUE(late->repeated);
  EXPECT_EQ(late->sent_seq, 1);
  EXPECT_EQ(late->header.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  absl::StatusOr<A2ATasks::Change> more_late = tasks_->AcceptMessage("echo", more);
  ASSERT_OK(more_late);
  EXPECT_EQ(more_late->sent_seq, 2);
  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("echo", id, std::nullopt);
  ASSERT_OK(task);
  EXPECT_EQ(task->history_size(), 3);  // hello, more, the agent's "done"
}

// The same message_id with other content is a client's mistake, not a repeat: refused, nothing
// changed. The same message_id from another sender, or to another agent, is another message.
TEST_F(A2ATasksTest, AMessageIdIsOneMessageOfOneSenderToOneAgent) {
  const a2apb::Message hello = UserText("hello");
  absl::StatusOr<A2ATasks::Change> first = tasks_->AcceptMessage("echo", hello);
  ASSERT_OK(first);
  const std::string id = first->header.task().id();
  a2apb::Message other = hello;
  other.mutable_parts(0)->set_text("goodbye");
  absl::StatusOr<A2ATasks::Change> refused = tasks_->AcceptMessage("echo", other);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("new message_id"));
  a2apb::Message elsewhere = hello;
  elsewhere.set_context_id("not-the-first-context");
  EXPECT_EQ(tasks_->AcceptMessage("echo", elsewhere).status().code(),
            absl::StatusCode::kAlreadyExists);
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  EXPECT_EQ(header->version(), first->header.version());
  EXPECT_EQ(header->history_count(), 1);

  std::set<std::string> ids = {id};
  for (const auto& [tenant, access] :
       {std::pair{"other-agent", Access::Unscoped()}, std::pair{"echo", Access::Agent("alice")},
        std::pair{"echo", Access::Agent("bob")}}) {
    absl::StatusOr<A2ATasks::Change> made = tasks_->AcceptMessage(tenant, hello, nullptr, access);
    ASSERT_OK(made);
    EXPECT_FALSE(made->repeated) << tenant << " " << access.principal;
    ids.insert(made->header.task().id());
  }
  EXPECT_EQ(ids.size(), 4u);
}

TEST_F(A2ATasksTest, VersionAndEventLogGrowWithEachUpdate) {
  const std::string id = NewTask("echo");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  a2apb::StreamResponse artifact;
  artifact.mutable_artifact_update()->mutable_artifact()->set_artifact_id("a1");
  artifact.mutable_artifact_update()->mutable_artifact()->add_parts()->set_text("part1");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, artifact));
  artifact.mutable_artifact_update()->set_append(true);
  artifact.mutable_artifact_update()->mutable_artifact()->mutable_parts(0)->set_text("part2");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, artifact));
  absl::StatusOr<A2ATasks::Change> done =
      tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_COMPLETED, "done"));
  ASSERT_OK(done);
  EXPECT_EQ(done->header.version(), 5);
  EXPECT_EQ(done->header.last_event_seq(), 5);
  EXPECT_EQ(done->header.history_count(), 2);  // the user's message and the status message

  // Updates after the end are ignored and change nothing.
  absl::StatusOr<A2ATasks::Change> late =
      tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING));
  ASSERT_OK(late);
  EXPECT_TRUE(late->events.empty());
  EXPECT_EQ(late->header.version(), 5);

  absl::StatusOr<std::vector<v1::StoredEvent>> events = tasks_->ReadEvents(id, 0, 100);
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 5u);
  for (size_t i = 0; i < events->size(); ++i)
    EXPECT_EQ((*events)[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ((*events)[4].event().status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ((*events)[4].event().status_update().task_id(), id);

  // Replay from the middle.
  absl::StatusOr<std::vector<v1::StoredEvent>> tail = tasks_->ReadEvents(id, 3, 100);
  ASSERT_OK(tail);
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].seq(), 4);

  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(task);
  ASSERT_EQ(task->artifacts_size(), 1);
  ASSERT_EQ(task->artifacts(0).parts_size(), 2);
  EXPECT_EQ(task->artifacts(0).parts(1).text(), "part2");
}

// The echo agent's answer as it streams it: its task (its own id, SUBMITTED), WORKING, an
// artifact, COMPLETED.
std::vector<a2apb::StreamResponse> EchoBurst() {
  std::vector<a2apb::StreamResponse> burst(4);
  burst[0].mutable_task()->set_id("agent-task-1");
  burst[0].mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_SUBMITTED);
  burst[1].mutable_status_update()->mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
  burst[2].mutable_artifact_update()->mutable_artifact()->set_artifact_id("echo");
  burst[2].mutable_artifact_update()->mutable_artifact()->add_parts()->set_text("hi");
  burst[3].mutable_status_update()->mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
  burst[3].mutable_status_update()->mutable_status()->mutable_message()->add_parts()->set_text(
      "echo: hi");
  return burst;
}

TEST_F(A2ATasksTest, ABurstIsStoredLikeItsUpdatesOneByOneAndDequeuesTheDelivery) {
  const std::vector<a2apb::StreamResponse> burst = EchoBurst();
  const std::string one_by_one = NewTask("echo");
  for (const a2apb::StreamResponse& update : burst) {
    ASSERT_OK(tasks_->ApplyAgentUpdate(one_by_one, update));
  }
  const std::string together = NewTask("echo");
  absl::StatusOr<A2ATasks::BurstResult> result =
      tasks_->ApplyAgentBurst(together, burst, /*delivery_seq=*/1);
  ASSERT_OK(result);
  EXPECT_EQ(result->applied, 4u);
  EXPECT_TRUE(result->delivery_done);
  EXPECT_EQ(result->change.events.size(), 3u);  // WORKING, the artifact, COMPLETED

  absl::StatusOr<v1::StoredTask> a = tasks_->GetHeader(one_by_one);
  absl::StatusOr<v1::StoredTask> b = tasks_->GetHeader(together);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(b->version(), a->version());
  EXPECT_EQ(b->last_event_seq(), a->last_event_seq());
  EXPECT_EQ(b->history_count(), a->history_count());
  EXPECT_EQ(b->agent_task_id(), "agent-task-1");
  EXPECT_EQ(b->task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(b->task().artifacts_size(), 1);
  // The delivery left the queue in the same transaction; the other task's is still queued.
  EXPECT_EQ(b->pending_deliveries(), 0);
  EXPECT_EQ(a->pending_deliveries(), 1);
  EXPECT_TRUE(absl::IsNotFound(deliveries_->GetDelivery(together, 1).status()));
  EXPECT_OK(deliveries_->GetDelivery(one_by_one, 1).status());

  absl::StatusOr<std::vector<v1::StoredEvent>> ea = tasks_->ReadEvents(one_by_one, 0, 100);
  absl::StatusOr<std::vector<v1::StoredEvent>> eb = tasks_->ReadEvents(together, 0, 100);
  ASSERT_OK(ea);
  ASSERT_OK(eb);
  ASSERT_EQ(eb->size(), ea->size());
  for (size_t i = 0; i < ea->size(); ++i) {
    EXPECT_EQ((*eb)[i].seq(), (*ea)[i].seq());
    EXPECT_EQ((*eb)[i].version(), (*ea)[i].version());
    EXPECT_EQ((*eb)[i].event().payload_case(), (*ea)[i].event().payload_case());
  }
}

// An agent's answer that is a Message of its own (A2A's direct answer), not a task.
a2apb::StreamResponse AgentMessage(const std::string& text, const std::string& task_id = "") {
  a2apb::StreamResponse r;
  a2apb::Message* m = r.mutable_message();
  m->set_message_id("agent-" + text);
  m->set_role(a2apb::ROLE_AGENT);
  m->set_context_id("the agent's own context");
  m->set_task_id(task_id);
  m->add_parts()->set_text(text);
  return r;
}

TEST_F(A2ATasksTest, ADirectMessageAnswerIsWhatItsSenderGetsAndTheTaskKeepsIt) {
  absl::StatusOr<A2ATasks::Change> accepted =
      tasks_->AcceptMessage("echo", UserText("hi", "", "ctx-m"));
  ASSERT_OK(accepted);
  const std::string id = accepted->header.task().id();
  const int64_t sent = accepted->queued_delivery_seq;
  ASSERT_GT(sent, 0);

  // Before the agent answers, the sender gets the task.
  absl::StatusOr<a2apb::SendMessageResponse> before = tasks_->SendAnswer(id, sent, std::nullopt);
  ASSERT_OK(before);
  ASSERT_TRUE(before->has_task());
  EXPECT_EQ(before->task().status().state(), a2apb::TASK_STATE_SUBMITTED);

  const std::vector<a2apb::StreamResponse> burst = {AgentMessage("hello back")};
  absl::StatusOr<A2ATasks::BurstResult> result = tasks_->ApplyAgentBurst(id, burst, sent);
  ASSERT_OK(result);
  EXPECT_TRUE(result->delivery_done);
  const v1::StoredTask& header = result->change.header;
  ASSERT_TRUE(header.has_message_answer());
  EXPECT_EQ(header.message_answer().answers_seq(), sent);
  EXPECT_FALSE(header.message_answer().names_task());

  // The sender gets the Message: the task's context, no task id (the agent named none).
  absl::StatusOr<a2apb::SendMessageResponse> answer = tasks_->SendAnswer(id, sent, std::nullopt);
  ASSERT_OK(answer);
  ASSERT_TRUE(answer->has_message()) << answer->DebugString();
  EXPECT_EQ(answer->message().parts(0).text(), "hello back");
  EXPECT_EQ(answer->message().message_id(), "agent-hello back");
  EXPECT_EQ(answer->message().role(), a2apb::ROLE_AGENT);
  EXPECT_EQ(answer->message().context_id(), "ctx-m");
  EXPECT_TRUE(answer->message().task_id().empty());
  // Another message's sender (none here: seq 0 or a later one) gets the task.
  absl::StatusOr<a2apb::SendMessageResponse> other = tasks_->SendAnswer(id, sent + 1, 0);
  ASSERT_OK(other);
  ASSERT_TRUE(other->has_task());
  EXPECT_EQ(other->task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(other->task().history_size(), 0);

  // Nothing is lost: the task is COMPLETED with the Message as its status message and in its
  // history.
  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(task);
  EXPECT_EQ(task->status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(task->status().message().parts(0).text(), "hello back");
  EXPECT_EQ(task->status().message().task_id(), id);
  ASSERT_EQ(task->history_size(), 2);
  EXPECT_EQ(task->history(1).parts(0).text(), "hello back");

  // The log holds the status change, marked; the sender's stream shows the Message in its
  // place, anyone else's the change.
  absl::StatusOr<std::vector<v1::StoredEvent>> events = tasks_->ReadEvents(id, 0, 100);
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 2u);
  const v1::StoredEvent& last = events->back();
  ASSERT_TRUE(last.event().has_status_update());
  EXPECT_EQ(last.event().status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_TRUE(last.has_message_answer());
  EXPECT_FALSE(events->front().has_message_answer());
  a2apb::StreamResponse streamed = A2ATasks::SendStreamEvent(last, sent);
  ASSERT_TRUE(streamed.has_message());
  EXPECT_EQ(streamed.message().parts(0).text(), "hello back");
  EXPECT_TRUE(streamed.message().task_id().empty());
  EXPECT_TRUE(A2ATasks::SendStreamEvent(last, sent + 1).has_status_update());
  EXPECT_TRUE(A2ATasks::SendStreamEvent(events->front(), sent).has_status_update());

  // Reopened: the answer is durable.
  Open();
  answer = tasks_->SendAnswer(id, sent, std::nullopt);
  ASSERT_OK(answer);
  EXPECT_TRUE(answer->has_message());

  // Bad input changes nothing.
  EXPECT_EQ(tasks_->SendAnswer(id, sent, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SendAnswer("no-such-task", sent, 0).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->SendAnswer(std::string(300, 'x'), sent, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(A2ATasksTest, ADirectMessageAnswerThatNamesATaskKeepsTheTaskId) {
  absl::StatusOr<A2ATasks::Change> accepted = tasks_->AcceptMessage("echo", UserText("hi"));
  ASSERT_OK(accepted);
  const std::string id = accepted->header.task().id();
  const int64_t sent = accepted->queued_delivery_seq;
  // The agent's own task id is served as the coordinator's.
  const std::vector<a2apb::StreamResponse> burst = {AgentMessage("in a task", "agent-task-9")};
  ASSERT_OK(tasks_->ApplyAgentBurst(id, burst, sent));
  absl::StatusOr<a2apb::SendMessageResponse> answer = tasks_->SendAnswer(id, sent, std::nullopt);
  ASSERT_OK(answer);
  ASSERT_TRUE(answer->has_message());
  EXPECT_EQ(answer->message().task_id(), id);
  EXPECT_EQ(answer->message().context_id(), accepted->header.task().context_id());
}

TEST_F(A2ATasksTest, ATaskAnswerIsNoMessageAnswer) {
  absl::StatusOr<A2ATasks::Change> accepted = tasks_->AcceptMessage("echo", UserText("hi"));
  ASSERT_OK(accepted);
  const std::string id = accepted->header.task().id();
  const int64_t sent = accepted->queued_delivery_seq;
  absl::StatusOr<A2ATasks::BurstResult> result = tasks_->ApplyAgentBurst(id, EchoBurst(), sent);
  ASSERT_OK(result);
  EXPECT_FALSE(result->change.header.has_message_answer());
  absl::StatusOr<a2apb::SendMessageResponse> answer = tasks_->SendAnswer(id, sent, 1);
  ASSERT_OK(answer);
  ASSERT_TRUE(answer->has_task());
  EXPECT_EQ(answer->task().status().message().parts(0).text(), "echo: hi");
  EXPECT_EQ(answer->task().history_size(), 1);  // history_length applies
  for (const v1::StoredEvent& event : result->change.events) {
    EXPECT_FALSE(event.has_message_answer());
  }
}

TEST_F(A2ATasksTest, AnAgentTaskIdThatTheAgentForgotIsForgottenAndNothingElseChanges) {
  const std::string task = NewTask("echo");
  std::vector<a2apb::StreamResponse> opening(1);
  opening[0].mutable_task()->set_id("agent-task-1");
  opening[0].mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
  ASSERT_OK(tasks_->ApplyAgentBurst(task, opening, /*delivery_seq=*/1));
  absl::StatusOr<v1::StoredTask> before = tasks_->GetHeader(task);
  ASSERT_OK(before);
  ASSERT_EQ(before->agent_task_id(), "agent-task-1");
  // Another id than the stored one changes nothing.
  ASSERT_OK(tasks_->ForgetAgentTaskId(task, "agent-task-2"));
  EXPECT_EQ(tasks_->GetHeader(task)->agent_task_id(), "agent-task-1");
  ASSERT_OK(tasks_->ForgetAgentTaskId(task, "agent-task-1"));
  absl::StatusOr<v1::StoredTask> after = tasks_->GetHeader(task);
  ASSERT_OK(after);
  EXPECT_TRUE(after->agent_task_id().empty());
  EXPECT_EQ(after->task().status().state(), a2apb::TASK_STATE_WORKING);
  EXPECT_EQ(after->history_count(), before->history_count());
  EXPECT_EQ(after->last_event_seq(), before->last_event_seq());
  // The agent's next first answer names its new id.
  opening[0].mutable_task()->set_id("agent-task-3");
  ASSERT_OK(tasks_->ApplyAgentBurst(task, opening, /*delivery_seq=*/1));
  EXPECT_EQ(tasks_->GetHeader(task)->agent_task_id(), "agent-task-3");
  EXPECT_EQ(tasks_->ForgetAgentTaskId("no-such-task", "x").code(), absl::StatusCode::kNotFound);
}

TEST_F(A2ATasksTest, ABurstStopsWhereTheTaskStopsAndKeepsTheDeliveryOtherwise) {
  const std::string id = NewTask("echo");
  // WORKING alone: the agent is not done, so the delivery stays queued.
  absl::StatusOr<A2ATasks::BurstResult> working =
      tasks_->ApplyAgentBurst(id, {Status(a2apb::TASK_STATE_WORKING)}, 1);
  ASSERT_OK(working);
  EXPECT_FALSE(working->delivery_done);
  EXPECT_OK(deliveries_->GetDelivery(id, 1).status());
  // Asking for input ends the turn: what comes after it in the burst is not applied.
  absl::StatusOr<A2ATasks::BurstResult> asked = tasks_->ApplyAgentBurst(
      id, {Status(a2apb::TASK_STATE_INPUT_REQUIRED, "which?"), Status(a2apb::TASK_STATE_COMPLETED)},
      1);
  ASSERT_OK(asked);
  EXPECT_EQ(asked->applied, 1u);
  EXPECT_TRUE(asked->delivery_done);
  EXPECT_EQ(asked->change.header.task().status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  EXPECT_TRUE(absl::IsNotFound(deliveries_->GetDelivery(id, 1).status()));
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  EXPECT_EQ(header->task().status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  EXPECT_EQ(header->last_event_seq(), 3);  // SUBMITTED, WORKING, INPUT_REQUIRED
  EXPECT_EQ(header->pending_deliveries(), 0);
}

TEST_F(A2ATasksTest, ABurstWithAnInvalidUpdateStoresNothing) {
  const std::string id = NewTask("echo");
  absl::StatusOr<v1::StoredTask> before = tasks_->GetHeader(id);
  ASSERT_OK(before);
  std::vector<a2apb::StreamResponse> burst = EchoBurst();
  burst[2] = Status(a2apb::TASK_STATE_UNSPECIFIED);  // a status update without a state
  absl::StatusOr<A2ATasks::BurstResult> result = tasks_->ApplyAgentBurst(id, burst, 1);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal) << result.status();
  EXPECT_NE(result.status().message().find("without a state"), std::string::npos);
  EXPECT_EQ(A2ATasks::CheckAgentUpdate(burst[2]).code(), absl::StatusCode::kInternal);
  EXPECT_OK(A2ATasks::CheckAgentUpdate(burst[1]));
  // Nothing of the burst was stored, not even the updates before the invalid one.
  absl::StatusOr<v1::StoredTask> after = tasks_->GetHeader(id);
  ASSERT_OK(after);
  EXPECT_EQ(after->SerializeAsString(), before->SerializeAsString());
  absl::StatusOr<std::vector<v1::StoredEvent>> events = tasks_->ReadEvents(id, 0, 100);
  ASSERT_OK(events);
  EXPECT_EQ(events->size(), 1u);  // SUBMITTED only
  EXPECT_OK(deliveries_->GetDelivery(id, 1).status());
}

TEST_F(A2ATasksTest, HistoryLength) {
  const std::string id = NewTask("echo");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_INPUT_REQUIRED, "q1")));
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("a1", id)));
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_INPUT_REQUIRED, "q2")));
  // History: hi, q1, a1, q2.
  absl::StatusOr<a2apb::Task> all = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(all);
  EXPECT_EQ(all->history_size(), 4);
  absl::StatusOr<a2apb::Task> none = tasks_->GetTask("", id, 0);
  ASSERT_OK(none);
  EXPECT_EQ(none->history_size(), 0);
  absl::StatusOr<a2apb::Task> two = tasks_->GetTask("", id, 2);
  ASSERT_OK(two);
  ASSERT_EQ(two->history_size(), 2);
  EXPECT_EQ(two->history(0).parts(0).text(), "a1");
  EXPECT_EQ(two->history(1).parts(0).text(), "q2");
  absl::StatusOr<a2apb::Task> many = tasks_->GetTask("", id, 99);
  ASSERT_OK(many);
  EXPECT_EQ(many->history_size(), 4);
  EXPECT_EQ(tasks_->GetTask("", id, -1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(A2ATasksTest, LongAndShortHistoriesReadTheSame) {
  // 1 + 2 * 12 = 25 messages: more than are read record by record, so both ways are used.
  const std::string id = NewTask("echo");
  for (int turn = 0; turn < 12; ++turn) {
    ASSERT_OK(tasks_->ApplyAgentUpdate(
        id, Status(a2apb::TASK_STATE_INPUT_REQUIRED, "q" + std::to_string(turn))));
    ASSERT_OK(tasks_->AcceptMessage("echo", UserText("a" + std::to_string(turn), id)));
  }
  absl::StatusOr<a2apb::Task> all = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(all);
  ASSERT_EQ(all->history_size(), 25);
  EXPECT_EQ(all->history(0).parts(0).text(), "hi");
  for (int turn = 0; turn < 12; ++turn) {
    EXPECT_EQ(all->history(1 + 2 * turn).parts(0).text(), "q" + std::to_string(turn));
    EXPECT_EQ(all->history(2 + 2 * turn).parts(0).text(), "a" + std::to_string(turn));
  }
  for (int length : {1, 3, 16, 17, 24, 25, 40}) {
    absl::StatusOr<a2apb::Task> latest = tasks_->GetTask("", id, length);
    ASSERT_OK(latest);
    const int expected = std::min(length, 25);
    ASSERT_EQ(latest->history_size(), expected) << length;
    for (int i = 0; i < expected; ++i) {
      EXPECT_EQ(latest->history(i).message_id(), all->history(25 - expected + i).message_id());
    }
  }
}

TEST_F(A2ATasksTest, BadMessagesAreRefusedAndChangeNothing) {
  a2apb::Message no_parts = UserText("x");
  no_parts.clear_parts();
  EXPECT_EQ(tasks_->AcceptMessage("echo", no_parts).status().code(),
            absl::StatusCode::kInvalidArgument);
  a2apb::Message empty_part = UserText("x");
  empty_part.add_parts();
  EXPECT_EQ(tasks_->AcceptMessage("echo", empty_part).status().code(),
            absl::StatusCode::kInvalidArgument);
  a2apb::Message no_id = UserText("x");
  no_id.clear_message_id();
  EXPECT_EQ(tasks_->AcceptMessage("echo", no_id).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->AcceptMessage("echo", UserText(std::string(8000, 'x'))).status().code(),
            absl::StatusCode::kResourceExhausted);
  absl::Status missing = tasks_->AcceptMessage("echo", UserText("x", "no-such-task")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a2a_protocol::Reason(missing), a2a_protocol::kTaskNotFound);

  const std::string id = NewTask("echo", "ctx-a");
  EXPECT_EQ(tasks_->AcceptMessage("echo", UserText("x", id, "ctx-b")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->AcceptMessage("other", UserText("x", id)).status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  EXPECT_EQ(header->version(), 1);
  EXPECT_EQ(header->history_count(), 1);
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  EXPECT_EQ(pending->size(), 1u);

  // An ended task takes no more messages.
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_COMPLETED)));
  absl::Status ended = tasks_->AcceptMessage("echo", UserText("x", id)).status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a2a_protocol::Reason(ended), a2a_protocol::kUnsupportedOperation);
}

TEST_F(A2ATasksTest, ListTasksPagesNewestFirstWithFilters) {
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i)
    ids.push_back(NewTask(i % 2 == 0 ? "even" : "odd", i < 3 ? "c1" : "c2"));
  ASSERT_OK(tasks_->ApplyAgentUpdate(ids[0], Status(a2apb::TASK_STATE_COMPLETED)));

  a2apb::ListTasksRequest request;
  request.set_page_size(3);
  std::vector<std::string> seen;
  for (int page = 0; page < 10; ++page) {
    absl::StatusOr<a2apb::ListTasksResponse> response = tasks_->ListTasks(request);
    ASSERT_OK(response);
    EXPECT_EQ(response->total_size(), 7);
    EXPECT_EQ(response->page_size(), 3);
    for (const a2apb::Task& t : response->tasks()) {
      seen.push_back(t.id());
      EXPECT_EQ(t.artifacts_size(), 0);
    }
    if (response->next_page_token().empty()) break;
    request.set_page_token(response->next_page_token());
  }
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen[0], ids[0]);  // its status changed last
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 7u);

  a2apb::ListTasksRequest by_tenant;
  by_tenant.set_tenant("odd");
  absl::StatusOr<a2apb::ListTasksResponse> odd = tasks_->ListTasks(by_tenant);
  ASSERT_OK(odd);
  EXPECT_EQ(odd->total_size(), 3);

  a2apb::ListTasksRequest by_context;
  by_context.set_context_id("c1");
  by_context.set_status(a2apb::TASK_STATE_SUBMITTED);
  absl::StatusOr<a2apb::ListTasksResponse> c1 = tasks_->ListTasks(by_context);
  ASSERT_OK(c1);
  EXPECT_EQ(c1->total_size(), 2);
  EXPECT_TRUE(c1->next_page_token().empty());

  // Only tasks whose status changed after the sixth task's status time.
  absl::StatusOr<a2apb::Task> sixth = tasks_->GetTask("", ids[5], 0);
  ASSERT_OK(sixth);
  a2apb::ListTasksRequest after;
  *after.mutable_status_timestamp_after() = sixth->status().timestamp();
  absl::StatusOr<a2apb::ListTasksResponse> recent = tasks_->ListTasks(after);
  ASSERT_OK(recent);
  EXPECT_EQ(recent->total_size(), 2);  // ids[6] and the completed ids[0]

  // A token from another listing or other filters is refused.
  a2apb::ListTasksRequest replay = by_tenant;
  replay.set_page_token(odd->next_page_token().empty() ? "bogus" : odd->next_page_token());
  EXPECT_EQ(tasks_->ListTasks(replay).status().code(), absl::StatusCode::kInvalidArgument);
  a2apb::ListTasksRequest first_page;
  first_page.set_page_size(1);
  first_page.set_tenant("even");
  absl::StatusOr<a2apb::ListTasksResponse> even = tasks_->ListTasks(first_page);
  ASSERT_OK(even);
  ASSERT_FALSE(even->next_page_token().empty());
  a2apb::ListTasksRequest wrong = by_context;
  wrong.set_page_token(even->next_page_token());
  EXPECT_EQ(tasks_->ListTasks(wrong).status().code(), absl::StatusCode::kInvalidArgument);

  a2apb::ListTasksRequest too_big;
  too_big.set_page_size(101);
  EXPECT_EQ(tasks_->ListTasks(too_big).status().code(), absl::StatusCode::kInvalidArgument);

  a2apb::ListTasksRequest with_artifacts;
  with_artifacts.set_include_artifacts(true);
  with_artifacts.set_history_length(0);
  absl::StatusOr<a2apb::ListTasksResponse> full = tasks_->ListTasks(with_artifacts);
  ASSERT_OK(full);
  EXPECT_EQ(full->tasks(0).history_size(), 0);
}

TEST_F(A2ATasksTest, CancelLocallyDropsDeliveriesAndRefusesEndedTasks) {
  const std::string id = NewTask("echo");
  absl::StatusOr<A2ATasks::Change> canceled = tasks_->CancelLocally("echo", id, "");
  ASSERT_OK(canceled);
  EXPECT_EQ(canceled->header.task().status().state(), a2apb::TASK_STATE_CANCELED);
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  EXPECT_TRUE(pending->empty());
  absl::Status again = tasks_->CancelLocally("echo", id, "").status();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a2a_protocol::Reason(again), a2a_protocol::kTaskNotCancelable);
}

TEST_F(A2ATasksTest, StoredStateSurvivesReopen) {
  const std::string id = NewTask("echo");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  Open();
  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(task);
  EXPECT_EQ(task->status().state(), a2apb::TASK_STATE_WORKING);
}

}  // namespace
}  // namespace coordinator
