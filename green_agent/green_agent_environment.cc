// The green agent's environment lifecycle: where an evaluation's commands run, the start of its
// environment (a container of its task's image, through the start template), its stop when the
// evaluation ends, and the sweep that stops environments whose evaluation ended while green was
// down. The templates themselves are environment.h's; the record of a started environment is
// kept beside the workspace, so that a restarted green agent finds what it started.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "green_agent/green_agent.h"

namespace green_agent {

namespace v1 = ::coordinator::v1;
using agent_runtime::RequestContext;

ExecEnv GreenAgent::EnvFor(const v1::TaskContext& context) const {
  // Absolute: a bind mount needs it (docker -v), and so does $WORKSPACE in a command that runs
  // in the workspace.
  auto absolute = [](const std::string& dir) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(dir, ec);
    return dir.empty() || ec ? dir : abs.lexically_normal().string();
  };
  ExecEnv env;
  env.workspace_dir = absolute(context.workspace_dir());
  env.shared_dir = absolute(context.shared_dir());
  env.environment_handle = context.environment_handle();
  env.context_id = context.context_id();
  env.task_id = context.external_task_id();
  env.env_name = EnvironmentName(workspaces_abs_, context.context_id());
  return env;
}

absl::StatusOr<v1::TaskContext> GreenAgent::StartEnvironment(const RequestContext& request,
                                                             v1::TaskContext context) {
  const std::string context_id = context.context_id();
  // A stop waits until the start has ended (and then stops what it started).
  std::shared_ptr<absl::Mutex> env_mu = EnvironmentLock(context_id);
  absl::MutexLock env_lock(env_mu.get());
  const std::vector<common::LogField> fields = {
      {"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}};
  const std::string root = ContextRoot(context_id);
  const ExecEnv env = EnvFor(context);
  auto fail = [&](const std::string& error, const std::string& state) {
    common::LogError(fields, "%s", error);
    return EndEvaluation(context_id, v1::CONTEXT_STATUS_FAILED, error, {{"environment", state}});
  };
  // A start that a crash (or a lost answer of the coordinator) interrupted may have left an
  // environment behind: it goes first.
  if (absl::StatusOr<EnvironmentRecord> left = ReadEnvironmentRecord(root); left.ok()) {
    ExecEnv old = env;
    old.environment_handle = left->handle.empty() ? left->env_name : left->handle;
    if (absl::Status s = environments_.Stop(old); !s.ok()) {
      left->state = "stop failed";
      left->error = std::string(s.message());
      (void)WriteEnvironmentRecord(root, *left);
      return fail(absl::StrCat("cannot remove the environment ", old.environment_handle,
                               " that an interrupted start left: ", s.message()),
                  "stop failed");
    }
    RemoveEnvironmentRecord(root);
    common::LogInfo(fields, "removed the environment %s that an interrupted start left",
                    old.environment_handle);
  }
  if (absl::Status s = WriteEnvironmentRecord(root, {context_id, env.env_name, "", "starting", ""});
      !s.ok()) {
    return fail(absl::StrCat("cannot start the evaluation's environment: ", s.message()),
                "start failed");
  }
  const absl::Time started = absl::Now();
  absl::StatusOr<std::string> handle = environments_.Start(env);
  if (!handle.ok()) {
    // Whatever the failed start made goes too; it printed no handle, so by {env_name}.
    ExecEnv made = env;
    made.environment_handle = env.env_name;
    if (absl::Status s = environments_.Stop(made); s.ok()) {
      RemoveEnvironmentRecord(root);
    } else {
      common::LogWarn(fields, "after the failed start, %s", s.message());
      (void)WriteEnvironmentRecord(
          root, {context_id, env.env_name, "", "stop failed", std::string(s.message())});
    }
    return fail(
        absl::StrCat("cannot start the evaluation's environment: ", handle.status().message()),
        "start failed");
  }
  if (absl::Status s =
          WriteEnvironmentRecord(root, {context_id, env.env_name, *handle, "running", ""});
      !s.ok()) {
    common::LogWarn(fields, "environment %s: %s", *handle, s.message());
  }
  absl::StatusOr<v1::TaskContext> updated = UpdateContext(context_id, [&](v1::TaskContext* c) {
    c->set_environment_handle(*handle);
    (*c->mutable_labels())["environment"] = "running";
  });
  if (!updated.ok()) {
    // The record keeps the handle: a retry stops this environment and starts another, the
    // sweep stops it once the evaluation has ended.
    return absl::UnavailableError(absl::StrCat("coordinator: ", updated.status().message()));
  }
  common::LogInfo(fields, "environment %s (%s) started in %s", *handle, env.env_name,
                  absl::FormatDuration(absl::Trunc(absl::Now() - started, absl::Milliseconds(1))));
  return updated;
}

void GreenAgent::ReleaseEnvironment(const std::string& context_id, const v1::TaskContext* known) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(ContextRoot(context_id)) / "environment.json",
                               ec)) {
    return;
  }
  std::shared_ptr<absl::Mutex> mu = EnvironmentLock(context_id);
  absl::MutexLock lock(mu.get());
  ReleaseEnvironmentLocked(context_id, known);
}

void GreenAgent::ReleaseEnvironmentLocked(const std::string& context_id,
                                          const v1::TaskContext* known) {
  const std::vector<common::LogField> fields = {{"context_id", context_id},
                                                {"agent", options_.name}};
  const std::string root = ContextRoot(context_id);
  absl::StatusOr<EnvironmentRecord> record = ReadEnvironmentRecord(root);
  if (absl::IsNotFound(record.status())) return;
  if (!record.ok()) {
    common::LogError(fields, "cannot stop the evaluation's environment: %s",
                     record.status().message());
    return;
  }
  if (!environments_.enabled()) {
    common::LogWarn(fields,
                    "the evaluation's environment %s is still recorded in %s, but no "
                    "--env_stop_template is set to stop it",
                    record->handle.empty() ? record->env_name : record->handle, root);
    return;
  }
  ExecEnv env = known != nullptr ? EnvFor(*known) : ExecEnv{};
  env.context_id = context_id;
  env.env_name = record->env_name;
  env.environment_handle = record->handle.empty() ? record->env_name : record->handle;
  const absl::Status stopped = environments_.Stop(env);
  if (stopped.ok()) {
    common::LogInfo(fields, "environment %s stopped", env.environment_handle);
  } else {
    const bool known_failure = record->state == "stop failed" && record->error == stopped.message();
    common::LogError(fields, "cannot stop the environment %s: %s (tried again every %s)",
                     env.environment_handle, stopped.message(),
                     absl::FormatDuration(options_.environment.sweep_interval));
    record->state = "stop failed";
    record->error = std::string(stopped.message());
    (void)WriteEnvironmentRecord(root, *record);
    if (known_failure) return;  // the context says so already
  }
  // The context's labels first, the record last: whoever finds the record gone (the judge's
  // task, about to publish the outcome) finds the context labelled.
  if (known != nullptr) {
    absl::StatusOr<v1::TaskContext> updated = UpdateContext(context_id, [&](v1::TaskContext* c) {
      auto& labels = *c->mutable_labels();
      if (!stopped.ok()) {
        labels["environment"] = "stop failed";
        labels["environment_error"] =
            Clip(absl::StrCat("cannot stop ", env.environment_handle, ": ", stopped.message()));
        return;
      }
      labels.erase("environment_error");
      if (labels["environment"] != "start failed") labels["environment"] = "stopped";
    });
    if (!updated.ok() && !absl::IsNotFound(updated.status())) {
      common::LogWarn(fields, "cannot label the context: %s", updated.status().message());
    }
  }
  if (stopped.ok()) RemoveEnvironmentRecord(root);
}

void GreenAgent::Sweep() {
  auto stopping = [this] {
    absl::MutexLock lock(&mu_);
    return sweep_stop_;
  };
  for (const EnvironmentRecord& record : ListEnvironmentRecords(options_.workspaces_dir)) {
    if (stopping()) return;
    absl::StatusOr<v1::TaskContext> context = GetContext(record.context_id, stopping);
    if (context.ok() && context->status() == v1::CONTEXT_STATUS_ACTIVE) continue;
    if (!context.ok() && !absl::IsNotFound(context.status())) {
      common::LogWarn({{"context_id", record.context_id}, {"agent", options_.name}},
                      "environment sweep: %s; tried again in %s", context.status().message(),
                      absl::FormatDuration(options_.environment.sweep_interval));
      return;
    }
    common::LogInfo({{"context_id", record.context_id}, {"agent", options_.name}},
                    "environment sweep: %s %s; stopping it",
                    record.handle.empty() ? record.env_name : record.handle,
                    context.ok() ? absl::StrCat("belongs to an evaluation that ended ",
                                                v1::ContextStatus_Name(context->status()))
                                 : std::string("belongs to a context that is gone"));
    ReleaseEnvironment(record.context_id, context.ok() ? &*context : nullptr);
  }
}

}  // namespace green_agent
