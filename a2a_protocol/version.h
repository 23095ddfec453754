// The A2A protocol version a call speaks, sent as the "a2a-version" metadata. Clients stamp every
// call with the version we speak; servers (the coordinator's A2A service, agents on the agent
// runtime) refuse a call that asks for another one with VERSION_NOT_SUPPORTED.
#ifndef A2A_PROTOCOL_VERSION_H_
#define A2A_PROTOCOL_VERSION_H_

#include <map>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/string_ref.h"

namespace a2a_protocol {

// The metadata key (gRPC metadata keys are lower case).
inline constexpr char kVersionHeader[] = "a2a-version";
// The version we speak and send.
inline constexpr char kVersion[] = "1.0";

// What grpc::ServerContextBase::client_metadata() returns.
using ClientMetadata = std::multimap<grpc::string_ref, grpc::string_ref>;

// Adds "a2a-version: 1.0" to an outbound call.
void AddVersion(grpc::ClientContext* context);

// OK when the call's a2a-version is absent, empty, "1.0", "1.0.<patch>" or "1"; otherwise
// VERSION_NOT_SUPPORTED naming the version asked for and `speaker` ("server", "agent": see
// VersionNotSupported). When the key is repeated, the first value counts.
[[nodiscard]] absl::Status CheckVersion(const ClientMetadata& client_metadata,
                                        absl::string_view speaker);

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_VERSION_H_
