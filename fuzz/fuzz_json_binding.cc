// libFuzzer harness for the A2A JSON bindings' readers (a2a_protocol/json_binding.h): whatever
// bytes arrive as a JSON-RPC request, a peer's JSON-RPC answer, an HTTP+JSON error body or an
// event stream must be read or refused cleanly. Invariants: a request that parses names a
// method and has object params that parse back as JSON; an error read from a peer is never OK;
// the event parser never hands out an event larger than its bound.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/json_binding.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "json binding: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  int code = 0;
  std::string id;
  absl::StatusOr<a2a_protocol::JsonRpcRequest> request =
      a2a_protocol::ParseJsonRpcRequest(input, &code, &id);
  if (request.ok()) {
    if (request->method.empty()) Fail("a request without a method was accepted");
    lf::a2a::v1::SendMessageRequest send;
    (void)a2a_protocol::FromJson(request->params_json, &send);
    lf::a2a::v1::ListTasksRequest list;
    (void)a2a_protocol::FromJson(request->params_json, &list);
  } else if (code != a2a_protocol::kJsonRpcParseError &&
             code != a2a_protocol::kJsonRpcInvalidRequest &&
             code != a2a_protocol::kJsonRpcInvalidParams) {
    Fail("a refused request got a code that is not the binding's");
  }

  absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(input);
  if (result.ok()) {
    lf::a2a::v1::StreamResponse event;
    (void)a2a_protocol::FromJson(*result, &event);
  }
  if (a2a_protocol::StatusFromJsonRpcError(input).ok()) Fail("a JSON-RPC error read as OK");
  if (a2a_protocol::StatusFromHttpError(400, input).ok()) Fail("an HTTP error read as OK");

  constexpr size_t kMaxEvent = 4096;
  a2a_protocol::SseParser parser(kMaxEvent);
  for (size_t at = 0; at < input.size(); at += 7) {
    const absl::Status fed = parser.Feed(input.substr(at, 7), [](std::string event) {
      if (event.size() > kMaxEvent) Fail("an event over the bound");
      return absl::OkStatus();
    });
    if (!fed.ok()) break;
  }
  return 0;
}
