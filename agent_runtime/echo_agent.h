// A tiny agent on the runtime, used by tests and as an example. It answers by the text of the
// message's first text part:
//   "hold"    works until canceled        "ask"     asks for input (INPUT_REQUIRED)
//   "fail"    fails                       "reject"  rejects the task
//   anything else: an "echo" artifact and COMPLETED with "echo: <text>".
#ifndef AGENT_RUNTIME_ECHO_AGENT_H_
#define AGENT_RUNTIME_ECHO_AGENT_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "agent_runtime/agent_runtime.h"

namespace agent_runtime {

class EchoAgent : public AgentExecutor {
 public:
  void Execute(const RequestContext& request, EventPublisher& events) override {
    std::string text;
    for (const a2apb::Part& part : request.message.parts()) {
      if (part.has_text()) {
        text = part.text();
        break;
      }
    }
    events.UpdateStatus(a2apb::TASK_STATE_WORKING);
    if (text == "hold") {
      events.UpdateStatus(a2apb::TASK_STATE_WORKING, "holding until canceled");
      while (!events.WaitCancelled(absl::Seconds(1))) {
      }
      return;  // the runtime publishes CANCELED
    }
    if (text == "ask") {
      events.UpdateStatus(a2apb::TASK_STATE_INPUT_REQUIRED, "what should I echo?");
      return;
    }
    if (text == "fail") {
      events.UpdateStatus(a2apb::TASK_STATE_FAILED, "failing as asked");
      return;
    }
    if (text == "reject") {
      events.UpdateStatus(a2apb::TASK_STATE_REJECTED, "rejecting as asked");
      return;
    }
    a2apb::Artifact artifact;
    artifact.set_artifact_id("echo");
    artifact.set_name("echo");
    artifact.add_parts()->set_text(text);
    events.AddArtifact(artifact);
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, absl::StrCat("echo: ", text));
  }
};

}  // namespace agent_runtime

#endif  // AGENT_RUNTIME_ECHO_AGENT_H_
