// The one place where clients of the coordinator make their channel (coordctl, the agent
// runtime, green_agent, purple_agent, echo_agent): plaintext or TLS, and the bearer token
// (docs/security.md) attached to every call.
#ifndef COMMON_GRPC_CLIENT_H_
#define COMMON_GRPC_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace common {

struct ClientCredentialOptions {
  // Sent as "authorization: Bearer <token>" on every call; empty (the default) sends none.
  std::string auth_token;
  // PEM root certificates the server's certificate must chain to; empty (the default) makes a
  // plaintext channel.
  std::string tls_ca_pem;
};

// Reads the credentials from files, so that a token never appears in `ps`: `auth_token_file`
// holds one token (surrounding whitespace is ignored), `tls_ca_file` PEM certificates. An
// empty path leaves that part out. A missing, unreadable, empty or oversized file, or a token
// with spaces or control characters in it, is INVALID_ARGUMENT naming the file.
[[nodiscard]] absl::StatusOr<ClientCredentialOptions> LoadClientCredentials(
    const std::string& auth_token_file, const std::string& tls_ca_file);

// A target that names several coordinators (replicas on one etcd data set), "h1:p1,h2:p2,...",
// as one gRPC target: an address list (ipv4: or ipv6:) that gRPC's pick_first walks, so that a
// client moves to the next replica when the one it uses is down. Host names in the list are
// resolved here, once, to all their addresses; a single name with several addresses needs no
// list (gRPC's DNS resolver does the same). `authority` is the first entry's host:port, which
// TLS checks the server certificate against. A target without a comma comes back as it is.
struct ExpandedTarget {
  std::string target;
  std::string authority;  // empty when the target was not a list
};
// INVALID_ARGUMENT for an empty entry, an entry that is not host:port, a name that does not
// resolve, or a list mixing IPv4 and IPv6 addresses.
[[nodiscard]] absl::StatusOr<ExpandedTarget> ExpandTarget(const std::string& target);

// A channel to `target` with `options`: TLS when tls_ca_pem is set, the token on every call.
// `target` may be a list of replicas (ExpandTarget); a list that does not expand is logged and
// used as it is, which fails every call with gRPC's resolution error.
// The token goes in through a client interceptor, so it is sent on plaintext channels too
// (gRPC's call credentials refuse those).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           const ClientCredentialOptions& options,
                                           const grpc::ChannelArguments& args = {});

// The target that dials, from this machine, a server listening on `listen_address` (host:port,
// with the port it bound): a wildcard host (0.0.0.0, [::]) becomes the loopback address of its
// family; any other address stays as it is.
std::string LocalDialTarget(const std::string& listen_address);

// ClientCredentialOptions from the --auth_token_file and --tls_ca_file flags of a binary that
// links common/client_flags.cc (the agents). Fails like LoadClientCredentials.
[[nodiscard]] absl::StatusOr<ClientCredentialOptions> ClientCredentialsFromFlags();

}  // namespace common

#endif  // COMMON_GRPC_CLIENT_H_
