// libFuzzer harness: arbitrary bytes as requests to coordinator.v1.ContextService of the real
// coordinator running in this process (fuzz/fuzz_server.h): the first byte picks the method, the
// rest is the serialized request.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzzing::FuzzService("coordinator.v1.ContextService", data, size);
}
