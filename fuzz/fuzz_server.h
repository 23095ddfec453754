// What the service harnesses share: the real coordinator (CoordinatorServer, with every service,
// the parse-error interceptor and the domain stores) started once per fuzzing process on a fresh
// temporary RocksDB directory, and a call of one of its methods with raw request bytes. The bytes
// go over a loopback channel exactly as a client would send them, so the server's own parsing is
// fuzzed too, not only the handlers.
#ifndef FUZZ_FUZZ_SERVER_H_
#define FUZZ_FUZZ_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzzing {

// One fuzz input against the service `service_name` (such as "coordinator.v1.ContextService"):
// the first byte picks the method (modulo the service's method count), the rest is the
// serialized request, sent as it is. Server-streaming methods are read for a short while and
// then cancelled. Aborts (a finding) when the server answers INTERNAL, UNKNOWN or DATA_LOSS:
// DESIGN.md promises a clear status for bad input, and those codes mean a handler went wrong.
// Returns 0, as LLVMFuzzerTestOneInput must.
int FuzzService(const char* service_name, const uint8_t* data, size_t size);

// FuzzService, returning the answer's status code (a grpc::StatusCode; 0 is OK) instead of 0.
int CallService(const char* service_name, const uint8_t* data, size_t size);

// The temporary directory this process's coordinator was started in (starting it if need be):
// its data dir is <dir>/data, and a harness may use other entries under it. It is removed at
// exit.
const std::string& ScratchDir();

// Call before the coordinator starts (from LLVMFuzzerInitialize) to start it with its HTTP port
// on 127.0.0.1:0, no authentication, event-stream keepalives every 200ms (so a stream whose
// reader left frees its thread soon) and calls through the HTTP bindings ending after 1s.
void EnableHttpPort();

// The ports of this process's coordinator (starting it if need be); HttpPort() is 0 unless
// EnableHttpPort was called first.
int GrpcPort();
int HttpPort();

// The coordinator's --backup_root: <ScratchDir()>/backups/root, created at start.
std::string BackupRoot();

}  // namespace fuzzing

#endif  // FUZZ_FUZZ_SERVER_H_
