// A client of an etcd cluster's v3 gRPC API (etcd 3.4) for the etcd backend: one channel per
// member, calls sent to the member that answered last and moved on to the next one when it is
// down, password authentication with the token renewed when it expires, and TLS.
//
// What is retried where: a read (Range, Status) goes to the next member on any transport error.
// A transaction goes to the next member only when it was never sent (the member was not
// connected, or etcd refused it before proposing it: no leader, too many requests); once sent, a
// lost answer leaves its outcome unknown, and the caller gets UNAVAILABLE saying so rather than
// a second application of the same writes.
//
// Only storage/ includes this header (it brings etcd's generated messages).
#ifndef STORAGE_ETCD_CLIENT_H_
#define STORAGE_ETCD_CLIENT_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/v3/rpc.grpc.pb.h"
#include "grpcpp/security/credentials.h"

namespace storage {

struct EtcdClientOptions {
  // host:port of each member's client URL (at least one).
  std::vector<std::string> endpoints;
  // TLS to the members: the CA that signed their certificates (PEM file; empty: the system's),
  // and a client certificate and key when the cluster asks for one.
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // etcd's own users (etcdctl user add): empty user means no authentication.
  std::string user;
  std::string password;
  // Bound on one call, retries on other members included.
  absl::Duration request_timeout = absl::Seconds(10);
};

class EtcdClient {
 public:
  // Makes the channels and, with a user, authenticates. Fails when no member answers within
  // the request timeout, naming the endpoints and the last error.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(
      EtcdClientOptions options);

  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // A linearizable or serializable read, per the request; retried on another member on
  // transport errors. OUT_OF_RANGE when the requested revision was compacted away.
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request);
  // The same with a time limit of its own instead of the request timeout: for a read that need
  // not give up as soon as the client's other calls must (an election's leader query, whose
  // client times out at a quarter of the lease).
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request, absl::Duration timeout);
  // One atomic transaction. UNAVAILABLE with "outcome unknown" when it was sent and the answer
  // was lost; RESOURCE_EXHAUSTED when etcd refuses it as too large or the cluster's space quota
  // is used up.
  [[nodiscard]] absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request);
  // The answering member's status (its database size among others).
  [[nodiscard]] absl::StatusOr<etcdserverpb::StatusResponse> Status();
  // Leases: a new one of `ttl_seconds` (etcd may raise it to its minimum), its revocation
  // (which deletes every key attached to it), and one keep-alive, which answers the TTL left
  // (0 when the lease has expired).
  [[nodiscard]] absl::StatusOr<int64_t> LeaseGrant(int64_t ttl_seconds);
  [[nodiscard]] absl::Status LeaseRevoke(int64_t id);
  [[nodiscard]] absl::StatusOr<int64_t> LeaseKeepAlive(int64_t id);

  const EtcdClientOptions& options() const { return options_; }

  // A watch stream on a connected member (the last good one first), with the auth token set on
  // `context`; null when no member is connected within the request timeout. The caller owns
  // the stream's life (etcd's Watch is one long bidirectional stream).
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
  OpenWatch(grpc::ClientContext* context);

 private:
  struct Member {
    std::string endpoint;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
    std::unique_ptr<etcdserverpb::Auth::Stub> auth;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };

  explicit EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {}

  // Runs `call` on a member (the last good one first) until one answers or `timeout` (the
  // request timeout when not given) passes; see the header comment for what is retried.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Invoke(absl::string_view what, bool idempotent, Call call,
                                  std::optional<absl::Duration> timeout = std::nullopt);
  // Whether `member`'s channel is connected, waiting for it up to `deadline` when it is
  // connecting.
  static bool Connected(Member& member, absl::Time deadline);
  // Gets a new token from `member`.
  [[nodiscard]] absl::Status Authenticate(Member& member, absl::Time deadline);
  void SetAuth(grpc::ClientContext& context, absl::Time deadline);
  // Why the members did not answer, as gRPC says when asked once more, with a hint for the
  // TLS mistakes it points to (wrong CA, no client certificate, TLS on one side only):
  // "; <endpoint> said: ... (...)", or empty.
  std::string WhyUnreachable();

  const EtcdClientOptions options_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::vector<Member> members_;
  // The member that answered last: the next call starts there.
  std::atomic<size_t> current_{0};
  absl::Mutex token_mu_;
  std::string token_ ABSL_GUARDED_BY(token_mu_);
};

// The absl::Status for a gRPC status etcd answered, with `what` as context.
absl::Status FromEtcdStatus(const grpc::Status& status, absl::string_view what);

}  // namespace storage

#endif  // STORAGE_ETCD_CLIENT_H_
