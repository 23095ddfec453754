// The coordinator's server-side TLS material: the certificate chain and private key named by
// --tls_cert_file and --tls_key_file, read and checked once at start so that a missing,
// unreadable, malformed or mismatched pair is a clear start error rather than a server that
// listens and then fails every handshake. The gRPC port and the HTTP port both use it.
#ifndef COORDINATOR_RPC_TLS_H_
#define COORDINATOR_RPC_TLS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace coordinator {

struct ServerTls {
  // The files as given (httplib's SSLServer reads them by path).
  std::string cert_file;
  std::string key_file;
  // Their PEM text (gRPC takes it in memory).
  std::string cert_pem;
  std::string key_pem;
};

// nullopt when both paths are empty (TLS off). INVALID_ARGUMENT when only one is set, when a
// file cannot be read or holds no PEM certificate / private key, or when the key does not belong
// to the certificate; the message names the flag and the file.
[[nodiscard]] absl::StatusOr<std::optional<ServerTls>> LoadServerTls(const std::string& cert_file,
                                                                     const std::string& key_file);

}  // namespace coordinator

#endif  // COORDINATOR_RPC_TLS_H_
