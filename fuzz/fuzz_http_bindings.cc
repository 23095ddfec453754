// libFuzzer harness for the HTTP port's A2A bindings (a2a_http/bindings.h): whole
// HTTP requests (method, path, Content-Type, Accept, A2A-Version, body) to a real coordinator's
// HTTP port, one agent registered behind it. They reach JSON-RPC at / and /agents/<name>, the
// HTTP+JSON routes (/message:send, /tasks/<id>:cancel, push configs, /<tenant>/...), the event
// streams and the agent cards, and through them the gRPC A2A service they forward to. A finding:
// an answer with INTERNAL, UNKNOWN or DATA_LOSS, or a crash (fuzz_http.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_http.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzzing::FuzzHttpRequest("", data, size);
}
