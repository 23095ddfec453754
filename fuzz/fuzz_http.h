// What the HTTP harnesses share: one fuzz input as one whole HTTP request to the real HTTP port
// of the coordinator fuzz_server.h starts (EnableHttpPort), sent with httplib's client over
// loopback as any client would send it, and the answer judged. The input reads like a request:
//
//   <METHOD> <path and query>\n
//   <Header>: <value>\n        (Content-Type, Accept, A2A-Version, A2A-Extensions; others dropped)
//   \n
//   <body>
//
// Bytes a request line cannot carry (controls, spaces, non-ASCII) are sent percent-encoded, so
// the server still decodes them.
#ifndef FUZZ_FUZZ_HTTP_H_
#define FUZZ_FUZZ_HTTP_H_

#include <cstddef>
#include <cstdint>

namespace fuzzing {

// Sends the request `data` describes, its path after `path_prefix` (such as "/console/api/";
// "" for none). Aborts (a finding) when the answer carries INTERNAL, UNKNOWN or DATA_LOSS (a
// 5xx error body, a JSON-RPC error, or an error event of a stream, read for at most half a
// second) or when the port stops answering. Returns 0, as LLVMFuzzerTestOneInput must.
int FuzzHttpRequest(const char* path_prefix, const uint8_t* data, size_t size);

}  // namespace fuzzing

#endif  // FUZZ_FUZZ_HTTP_H_
