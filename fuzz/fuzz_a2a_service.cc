// libFuzzer harness: arbitrary bytes as requests to lf.a2a.v1.A2AService (the A2A gateway) of the
// real coordinator running in this process (fuzz/fuzz_server.h): the first byte picks the method,
// the rest is the serialized request.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzzing::FuzzService("lf.a2a.v1.A2AService", data, size);
}
