// The green agent's `execute:` messages: a command run in the evaluation's workspace (or its
// environment), its result kept per exec_seq so that a retried message is answered with the same
// result, recorded at the coordinator once, and answered as an artifact.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/uuid.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "green_agent/green_agent.h"

namespace green_agent {
namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
using agent_runtime::EventPublisher;
using agent_runtime::RequestContext;

// The exec_seq of an `execute:` message (its metadata; 0 when it has none).
int64_t ExecSeq(const a2apb::Message& message) {
  auto it = message.metadata().fields().find("exec_seq");
  if (it == message.metadata().fields().end()) return 0;
  if (it->second.has_number_value()) return static_cast<int64_t>(it->second.number_value());
  int64_t v = 0;
  if (it->second.has_string_value() && absl::SimpleAtoi(it->second.string_value(), &v)) return v;
  return 0;
}

std::string ResultJson(const ExecResult& r) {
  google::protobuf::Struct s;
  (*s.mutable_fields())["exit_code"].set_number_value(r.exit_code);
  (*s.mutable_fields())["output"].set_string_value(r.output);
  (*s.mutable_fields())["timed_out"].set_bool_value(r.timed_out);
  (*s.mutable_fields())["duration_ms"].set_number_value(
      static_cast<double>(absl::ToInt64Milliseconds(r.duration)));
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(s, &out);
  return out;
}

absl::StatusOr<ExecResult> ParseResultJson(const std::string& json) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(json, &s).ok()) {
    return absl::DataLossError("unreadable result file");
  }
  ExecResult r;
  r.exit_code = static_cast<int>(s.fields().at("exit_code").number_value());
  r.output = s.fields().at("output").string_value();
  r.timed_out = s.fields().at("timed_out").bool_value();
  r.duration = absl::Milliseconds(s.fields().at("duration_ms").number_value());
  return r;
}

}  // namespace

std::optional<v1::TaskContext> GreenAgent::ActiveContext(const std::string& context_id,
                                                         EventPublisher& events) {
  absl::StatusOr<v1::TaskContext> context = GetContext(context_id);
  if (absl::IsNotFound(context.status())) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                        absl::StrCat("unknown context ", context_id,
                                     ": no evaluation runs there (start one with \"Task ID: "
                                     "<id>\")"));
    return std::nullopt;
  }
  if (!context.ok()) {
    events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                        absl::StrCat("coordinator: ", context.status().message()));
    return std::nullopt;
  }
  if (context->status() != v1::CONTEXT_STATUS_ACTIVE) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                        absl::StrCat("the evaluation in context ", context_id, " has ended (",
                                     v1::ContextStatus_Name(context->status()), ")"));
    return std::nullopt;
  }
  return *std::move(context);
}

std::optional<ExecResult> GreenAgent::ExecuteOnce(const RequestContext& request,
                                                  const std::string& command,
                                                  const v1::TaskContext& context, int64_t seq,
                                                  EventPublisher& events) {
  const std::string& context_id = request.context_id;
  const std::string results_dir = ContextRoot(context_id) + "/results";
  const std::string result_file = absl::StrCat(results_dir, "/", seq, ".json");
  if (seq > 0) {
    absl::StatusOr<std::string> stored = ReadFile(result_file);
    if (stored.ok()) {
      absl::StatusOr<ExecResult> parsed = ParseResultJson(*stored);
      if (parsed.ok()) return *parsed;
    }
  }
  const ExecEnv env = EnvFor(context);
  if (environments_.enabled() && env.environment_handle.empty()) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                        absl::StrCat("the evaluation in context ", context_id,
                                     " has no environment yet (it is being started)"));
    return std::nullopt;
  }
  absl::StatusOr<ExecResult> ran = executor_.Run(command, env);
  if (!ran.ok()) {
    events.UpdateStatus(a2apb::TASK_STATE_FAILED, ran.status().message());
    return std::nullopt;
  }
  // A command that failed in a per-evaluation environment: is the environment still there?
  if (environments_.enabled() && (ran->exit_code != 0 || ran->timed_out)) {
    if (absl::Status alive = environments_.Check(env); !alive.ok()) {
      // Ended meanwhile (cancelled, say)? That is what stopped the environment.
      absl::StatusOr<v1::TaskContext> now = GetContext(context_id);
      if (now.ok() && now->status() != v1::CONTEXT_STATUS_ACTIVE) {
        ReleaseEnvironment(context_id, &*now);
        events.UpdateStatus(a2apb::TASK_STATE_REJECTED,
                            absl::StrCat("the evaluation in context ", context_id, " has ended (",
                                         v1::ContextStatus_Name(now->status()), ")"));
        return std::nullopt;
      }
      const std::string error =
          absl::StrCat("the evaluation's environment ", env.environment_handle,
                       " stopped working: ", alive.message());
      common::LogError(
          {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
          "%s (during \"%s\", which exited %d)", error, Clip(command, 200), ran->exit_code);
      absl::StatusOr<v1::TaskContext> ended =
          EndEvaluation(context_id, v1::CONTEXT_STATUS_FAILED, error, {});
      ReleaseEnvironment(context_id, ended.ok() ? &*ended : &context);
      events.UpdateStatus(a2apb::TASK_STATE_FAILED, error);
      return std::nullopt;
    }
  }
  if (seq > 0) {
    std::error_code ec;
    std::filesystem::create_directories(results_dir, ec);
    if (absl::Status s = WriteFileAtomically(result_file, ResultJson(*ran)); !s.ok()) {
      common::LogWarn(
          {{"context_id", context_id}, {"task_id", request.task_id}, {"agent", options_.name}},
          "cannot keep the result of exec %d: %s", seq, s.message());
    }
  }
  return *std::move(ran);
}

absl::Status GreenAgent::RecordExecution(const std::string& context_id, const std::string& command,
                                         const ExecResult& result) {
  v1::RecordCommandRequest record;
  record.set_context_id(context_id);
  record.set_command(command);
  record.set_exit_code(result.exit_code);
  *record.mutable_duration() = google::protobuf::util::TimeUtil::NanosecondsToDuration(
      absl::ToInt64Nanoseconds(result.duration));
  record.set_output_digest(absl::StrCat("sha256:", common::Sha256Hex(result.output)));
  record.set_request_id(common::NewUuid());
  v1::RecordCommandResponse response;
  return agent_runtime::CallWithRetry(
      [&](grpc::ClientContext* c) { return contexts_->RecordCommand(c, record, &response); },
      options_.retry);
}

void GreenAgent::RunCommand(const RequestContext& request, const std::string& command,
                            EventPublisher& events) {
  const std::string& context_id = request.context_id;
  if (command.empty()) {
    events.UpdateStatus(a2apb::TASK_STATE_REJECTED, "execute: needs a command");
    return;
  }
  std::shared_ptr<absl::Mutex> mu = ContextLock(context_id);
  absl::MutexLock lock(mu.get());
  std::optional<v1::TaskContext> context = ActiveContext(context_id, events);
  if (!context.has_value()) return;
  const int64_t seq = ExecSeq(request.message);
  const int64_t count = context->command_count();
  if (seq > count + 1) {
    events.UpdateStatus(
        a2apb::TASK_STATE_REJECTED,
        absl::StrCat("exec_seq ", seq, " is out of order: ", count, " commands were recorded"));
    return;
  }
  std::optional<ExecResult> result = ExecuteOnce(request, command, *context, seq, events);
  if (!result.has_value()) return;
  // Record once per exec_seq. A RecordCommand whose answer was lost may have been applied: its
  // request_id, the same on every retry, makes the coordinator answer a retry from the record.
  if (seq == 0 || seq == count + 1) {
    if (absl::Status recorded = RecordExecution(context_id, command, *result); !recorded.ok()) {
      events.UpdateStatus(a2apb::TASK_STATE_FAILED,
                          absl::StrCat("cannot record the command: ", recorded.message()));
      return;
    }
  }
  a2apb::Artifact artifact;
  artifact.set_artifact_id("result");
  artifact.set_name("result");
  artifact.add_parts()->set_text(result->output);
  google::protobuf::Struct* data = artifact.add_parts()->mutable_data()->mutable_struct_value();
  (*data->mutable_fields())["exit_code"].set_number_value(result->exit_code);
  (*data->mutable_fields())["exec_seq"].set_number_value(static_cast<double>(seq));
  (*data->mutable_fields())["timed_out"].set_bool_value(result->timed_out);
  events.AddArtifact(artifact);
  events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, absl::StrCat("exit code ", result->exit_code));
}

}  // namespace green_agent
