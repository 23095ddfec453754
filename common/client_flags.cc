// The client credential flags of the agents (common/grpc_client.h). In a file of its own so
// that only binaries that call ClientCredentialsFromFlags get the flags.
#include "absl/flags/flag.h"
#include "common/grpc_client.h"

ABSL_FLAG(std::string, auth_token_file, "",
          "file holding the bearer token presented to the coordinator (docs/security.md); "
          "empty (the default) sends none");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM root certificate(s) of the coordinator's TLS certificate; empty (the default) "
          "connects in plaintext");

namespace common {

absl::StatusOr<ClientCredentialOptions> ClientCredentialsFromFlags() {
  return LoadClientCredentials(absl::GetFlag(FLAGS_auth_token_file),
                               absl::GetFlag(FLAGS_tls_ca_file));
}

}  // namespace common
