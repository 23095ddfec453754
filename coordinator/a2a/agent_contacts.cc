#include "coordinator/a2a/agent_contacts.h"

#include <utility>

#include "a2a_protocol/errors.h"
#include "absl/time/clock.h"

namespace coordinator {

AgentContacts::AgentContacts(ProbeCall probe, AgentContactsOptions options)
    : probe_(std::move(probe)),
      options_(options),
      pool_(std::make_unique<common::ThreadPool>(options.probe_threads,
                                                 common::ThreadPool::kUnbounded, "agent-probe")) {}

AgentContacts::~AgentContacts() { Stop(); }

bool AgentContacts::Answered(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return true;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
      return false;
    default:
      // Something answered, but not as an A2A agent: the endpoint is not the agent's.
      return a2a_protocol::Reason(status) != a2a_protocol::kInvalidAgentResponse;
  }
}

void AgentContacts::Record(const std::string& agent, absl::string_view via, bool reached,
                           absl::string_view error) {
  const absl::Time now = absl::Now();
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    AgentContact& contact = contacts_[agent];
    changed = contact.last_call == absl::InfinitePast() || contact.reached != reached;
    contact.last_call = now;
    contact.via = std::string(via);
    contact.reached = reached;
    contact.error = reached ? "" : std::string(error);
    if (reached) contact.last_seen = now;
  }
  if (changed) Changed(agent);
}

AgentContact AgentContacts::Get(const std::string& agent) {
  absl::MutexLock lock(&mu_);
  auto it = contacts_.find(agent);
  return it == contacts_.end() ? AgentContact() : it->second;
}

AgentContact AgentContacts::ProbeIfStale(const v1::Agent& agent) {
  absl::MutexLock lock(&mu_);
  AgentContact& contact = contacts_[agent.name()];
  if (stopping_ || in_flight_ >= options_.max_probes_in_flight || contact.probing ||
      absl::Now() - contact.last_call < options_.probe_interval) {
    return contact;
  }
  contact.probing = true;
  ++in_flight_;
  // Queued under mu_, so never on a pool that Stop is already tearing down.
  pool_->Schedule([this, agent] { RunProbe(agent); });
  return contact;
}

void AgentContacts::RunProbe(const v1::Agent& agent) {
  bool stopping = false;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
  }
  // A probe still queued when the contacts stop is dropped, not made.
  Outcome outcome;
  if (!stopping) outcome = probe_(agent, absl::Now() + options_.probe_timeout);
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    AgentContact& contact = contacts_[agent.name()];
    contact.probing = false;
    if (!stopping) {
      const absl::Time now = absl::Now();
      contact.last_call = now;
      contact.via = "probe";
      contact.reached = outcome.reached;
      contact.error = outcome.reached ? "" : outcome.error;
      if (outcome.reached) contact.last_seen = now;
    }
  }
  Changed(agent.name());
}

void AgentContacts::Stop() {
  std::unique_ptr<common::ThreadPool> pool;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    pool = std::move(pool_);
  }
  pool.reset();  // the probe in flight ends by its deadline; those queued are dropped
}

}  // namespace coordinator
