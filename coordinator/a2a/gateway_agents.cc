// What the gateway does for the services besides delivering messages: cancelling a task at its
// agent, resolving a registration by card URL, probing an agent's reachability. Each call to an
// agent is recorded in its contacts (agent_contacts.h).
#include <memory>
#include <string>
#include <utility>

#include "a2a_protocol/errors.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/a2a/card_fetch.h"
#include "coordinator/a2a/gateway.h"

namespace coordinator {

absl::StatusOr<a2apb::Task> A2AGateway::CancelTask(const a2apb::CancelTaskRequest& request) {
  ASSIGN_OR_RETURN(a2apb::Task current, tasks_->GetTask(request.tenant(), request.id(), 0));
  if (IsTerminal(current.status().state())) {
    return a2a_protocol::TaskNotCancelable(
        absl::StrCat("task ", request.id(), " has already ended (",
                     a2apb::TaskState_Name(current.status().state()), ")"));
  }
  ASSIGN_OR_RETURN(v1::StoredTask header, tasks_->GetHeader(request.id()));
  bool agent_has_it = false;
  if (!header.agent_task_id().empty()) {
    absl::StatusOr<v1::Agent> agent = agents_->Get(header.tenant());
    absl::StatusOr<std::unique_ptr<AgentTransport>> transport =
        agent.ok() ? transports_.For(*agent) : agent.status();
    if (transport.ok()) {
      a2apb::CancelTaskRequest forward;
      forward.set_id(header.agent_task_id());
      *forward.mutable_metadata() = request.metadata();
      absl::StatusOr<a2apb::Task> reply =
          (*transport)->CancelTask(forward, absl::Now() + options_.call_timeout);
      contacts_->RecordCall(agent->name(), "cancel", reply.status());
      if (reply.ok()) {
        agent_has_it = true;
        a2apb::StreamResponse update;
        *update.mutable_task() = *std::move(reply);
        RETURN_IF_ERROR(tasks_->ApplyAgentUpdate(request.id(), update).status());
      } else if (absl::IsFailedPrecondition(reply.status())) {
        return reply.status();  // the agent says it cannot be canceled now
      }
      // NOT_FOUND: the agent is not running it; UNAVAILABLE: the agent is down. Either way
      // nothing runs the task, so it is canceled here.
    }
  }
  if (!agent_has_it) {
    RETURN_IF_ERROR(tasks_->CancelLocally(request.tenant(), request.id(), "").status());
  }
  return tasks_->GetTask(request.tenant(), request.id(), std::nullopt);
}

absl::StatusOr<v1::Agent> A2AGateway::ResolveRegistration(const v1::Agent& request) const {
  CardFetchOptions fetch;
  fetch.outbound_allow = options_.outbound_allow;
  fetch.timeout = options_.call_timeout;
  absl::StatusOr<v1::Agent> resolved = coordinator::ResolveRegistration(request, fetch);
  // Fetching the card was a call to the agent (only by card URL: by endpoint nothing is called).
  // A card refused for what it says (not a card, no interface we speak) still came from it.
  if (!request.card_url().empty() && request.endpoint().empty()) {
    const bool reached = resolved.ok() || (!absl::IsUnavailable(resolved.status()) &&
                                           !absl::IsPermissionDenied(resolved.status()) &&
                                           !absl::IsDeadlineExceeded(resolved.status()));
    contacts_->Record(request.name(), "card", reached,
                      resolved.ok() ? "" : resolved.status().message());
  }
  return resolved;
}

AgentContacts::Outcome A2AGateway::ProbeAgent(const v1::Agent& agent, absl::Time deadline) {
  absl::StatusOr<std::unique_ptr<AgentTransport>> transport = transports_.For(agent);
  if (!transport.ok()) {
    // No call can be made (a binding we cannot use, a host no longer allowed).
    return AgentContacts::Outcome{false, std::string(transport.status().message())};
  }
  a2apb::GetTaskRequest get;
  // No agent hands out this id: the agent's "task not found" is the answer a probe expects.
  get.set_id("coordinator-reachability-probe");
  get.set_history_length(0);
  return AgentContacts::OutcomeOf((*transport)->GetTask(get, deadline).status());
}

}  // namespace coordinator
