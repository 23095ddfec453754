// Stamping and checking the a2a-version metadata (see version.h).
#include "a2a_protocol/version.h"

#include "a2a_protocol/errors.h"
#include "absl/strings/match.h"

namespace a2a_protocol {

void AddVersion(grpc::ClientContext* context) { context->AddMetadata(kVersionHeader, kVersion); }

absl::Status CheckVersion(const ClientMetadata& client_metadata, absl::string_view speaker) {
  // lower_bound, not find: with repeated keys it is the first one received.
  auto it = client_metadata.lower_bound(kVersionHeader);
  if (it == client_metadata.end() || it->first != kVersionHeader) return absl::OkStatus();
  const absl::string_view version(it->second.data(), it->second.size());
  // A patch number does not change the protocol ("1.0.1" is 1.0).
  if (version.empty() || version == kVersion || version == "1" ||
      absl::StartsWith(version, "1.0.")) {
    return absl::OkStatus();
  }
  return VersionNotSupported(version, speaker);
}

}  // namespace a2a_protocol
