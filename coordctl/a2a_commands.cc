// coordctl send / watch: talk to an agent through the coordinator's A2A gateway (the tenant
// names the agent) and follow a task until it ends.
#include <memory>
#include <ostream>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/uuid.h"
#include "coordctl/a2a_follow.h"
#include "coordctl/cli.h"
#include "coordctl/progress.h"

namespace coordctl {
namespace {

namespace a2apb = ::lf::a2a::v1;

std::string StatusLine(const a2apb::Task& task) {
  std::string text;
  if (task.status().has_message()) {
    for (const a2apb::Part& p : task.status().message().parts()) {
      if (p.has_text()) absl::StrAppend(&text, text.empty() ? "" : " ", p.text());
    }
  }
  return absl::StrCat(TaskStateWord(task.status().state()), text.empty() ? "" : ": ", text);
}

void PrintArtifacts(const Env& env, const a2apb::Task& task) {
  for (const a2apb::Artifact& artifact : task.artifacts()) {
    for (const a2apb::Part& part : artifact.parts()) {
      if (part.has_text()) {
        *env.out << "artifact " << artifact.name() << ": " << part.text() << "\n";
      } else if (part.has_data()) {
        *env.out << "artifact " << artifact.name() << ": " << ToJson(part.data()) << "\n";
      }
    }
  }
}

// Exit code of a finished task: 0 when COMPLETED, 1 otherwise.
int TaskExit(const a2apb::Task& task) {
  return task.status().state() == a2apb::TASK_STATE_COMPLETED ? kExitOk : kExitNo;
}

}  // namespace

bool TaskEnded(a2apb::TaskState s) {
  return s == a2apb::TASK_STATE_COMPLETED || s == a2apb::TASK_STATE_FAILED ||
         s == a2apb::TASK_STATE_CANCELED || s == a2apb::TASK_STATE_REJECTED;
}

std::string TaskStateWord(a2apb::TaskState s) {
  std::string name = a2apb::TaskState_Name(s);
  const std::string prefix = "TASK_STATE_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

int FollowTask(const Env& env, const std::string& task_id, absl::Duration for_at_most, bool json,
               lf::a2a::v1::Task* ended) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + for_at_most;
  std::string last;
  // On a terminal the task's status line is redrawn in place with the time it has taken.
  std::unique_ptr<LiveLines> live;
  if (!json && IsInteractive(env.out)) live = std::make_unique<LiveLines>(env.out);
  while (true) {
    a2apb::GetTaskRequest request;
    request.set_id(task_id);
    request.set_history_length(0);
    a2apb::Task task;
    auto context = env.NewA2AContext();
    grpc::Status s = stub->GetTask(context.get(), request, &task);
    if (!s.ok() && s.error_code() != grpc::StatusCode::UNAVAILABLE &&
        s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return ReportRpcError(env, s);
    }
    if (s.ok()) {
      const std::string line = StatusLine(task);
      if (live != nullptr) {
        live->Set(
            "task",
            absl::StrCat("task ", task_id, "  ", line, "  (",
                         absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Seconds(1))),
                         ")"));
      } else if (line != last && !json) {
        *env.out << line << std::endl;
      }
      last = line;
      if (TaskEnded(task.status().state())) {
        if (ended != nullptr) *ended = task;
        if (json) {
          *env.out << ToJson(task) << std::endl;
        } else {
          PrintArtifacts(env, task);
          env.out->flush();
        }
        return TaskExit(task);
      }
    }
    if (absl::Now() >= deadline) {
      return Fail(env, absl::StrCat("task ", task_id, " has not ended after ",
                                    absl::FormatDuration(for_at_most)));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

namespace {

int RunSend(const Env& env, const ParsedArgs& args) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::SendMessageRequest request;
  request.set_tenant(args.positional[0]);
  a2apb::Message* message = request.mutable_message();
  message->set_message_id(common::NewUuid());
  message->set_role(a2apb::ROLE_USER);
  message->set_context_id(args.get("context", common::NewUuid()));
  if (args.has("task")) message->set_task_id(args.get("task"));
  std::vector<std::string> words(args.positional.begin() + 1, args.positional.end());
  message->add_parts()->set_text(absl::StrJoin(words, " "));
  request.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse response;
  auto context = env.NewA2AContext();
  grpc::Status s = stub->SendMessage(context.get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  const a2apb::Task& task = response.task();
  if (!args.flag("wait")) {
    if (args.flag("json")) {
      *env.out << ToJson(task) << std::endl;
    } else {
      *env.out << "task " << task.id() << " context " << task.context_id() << " "
               << StatusLine(task) << std::endl;
    }
    return kExitOk;
  }
  if (!args.flag("json")) {
    *env.out << "task " << task.id() << " context " << task.context_id() << std::endl;
  }
  absl::Duration for_at_most = absl::InfiniteDuration();
  if (args.has("for")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("for", args.get("for"));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    for_at_most = *d;
  }
  return FollowTask(env, task.id(), for_at_most, args.flag("json"));
}

int RunA2AWatch(const Env& env, const ParsedArgs& args) {
  absl::Duration for_at_most = absl::InfiniteDuration();
  if (args.has("for")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("for", args.get("for"));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    for_at_most = *d;
  }
  return FollowTask(env, args.positional[0], for_at_most, args.flag("json"));
}

}  // namespace

void AddA2ACommands(std::vector<Command>* commands) {
  commands->push_back({{"send"},
                       "<agent> <text...> [--context ID] [--task ID] [--wait [--for D]] [--json]",
                       "send a text message to an agent through the coordinator; prints the "
                       "task (--wait: follows it until it ends; exit 0 when COMPLETED)",
                       {"context", "task", "for"},
                       {"wait", "json"},
                       2,
                       -1,
                       false,
                       RunSend});
  commands->push_back({{"watch"},
                       "<task_id> [--for D] [--json]",
                       "print a task's status on each change until it ends, then its "
                       "artifacts; exit 0 when COMPLETED, 1 otherwise",
                       {"for"},
                       {"json"},
                       1,
                       1,
                       false,
                       RunA2AWatch});
}

}  // namespace coordctl
