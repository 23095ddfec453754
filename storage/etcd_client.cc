#include "storage/etcd_client.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/reconnect.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"

namespace storage {
namespace {

// Reads a PEM file that must hold `block` ("CERTIFICATE", "PRIVATE KEY"): gRPC takes any bytes
// and fails only later, when it connects, with nothing in the call's error to say which file.
absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view what,
                                    absl::string_view block) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot read the etcd ", what, " ", path));
  std::stringstream text;
  text << in.rdbuf();
  const std::string pem = text.str();
  // "-----BEGIN EC PRIVATE KEY-----" and "-----BEGIN RSA PRIVATE KEY-----" are keys too.
  if (!absl::StrContains(pem, "-----BEGIN ") ||
      !absl::StrContains(pem, absl::StrCat(block, "-----"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the etcd ", what, " ", path, " holds no PEM ", block));
  }
  return pem;
}

// Errors etcd gives before it proposes a request to Raft: the request was not applied, so it
// may go to another member whatever it was.
bool RefusedBeforeProposal(const grpc::Status& s) {
  const std::string& m = s.error_message();
  return absl::StrContains(m, "etcdserver: no leader") ||
         absl::StrContains(m, "etcdserver: too many requests") ||
         absl::StrContains(m, "etcdserver: not capable") ||
         absl::StrContains(m, "etcdserver: server stopped");
}

bool TokenExpired(const grpc::Status& s) {
  return absl::StrContains(s.error_message(), "invalid auth token");
}

grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  // Range pages and transactions are bounded by the store; the answer is not.
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A member that comes back is used again within a second. A caller does not wait on one
  // connection attempt (Connected moves to the next member after a second).
  common::SetQuickReconnect(args);
  // A member cut off without a reset is noticed (etcd allows pings every 5 s by default).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  return args;
}

}  // namespace

absl::Status FromEtcdStatus(const grpc::Status& status, absl::string_view what) {
  if (status.ok()) return absl::OkStatus();
  const std::string msg = absl::StrCat(what, ": ", status.error_message());
  const std::string& m = status.error_message();
  // etcd answers these with codes that would mislead a caller of the store.
  if (absl::StrContains(m, "too many operations in txn request") ||
      absl::StrContains(m, "request is too large") ||
      absl::StrContains(m, "database space exceeded")) {
    return absl::ResourceExhaustedError(msg);
  }
  if (absl::StrContains(m, "required revision has been compacted")) {
    return absl::OutOfRangeError(msg);
  }
  // etcd 3.4 answers some requests of an authenticated user outside its role's keys with
  // "user name is empty" (INVALID_ARGUMENT) rather than "permission denied".
  if (absl::StrContains(m, "user name is empty")) {
    return absl::PermissionDeniedError(
        absl::StrCat(msg, " (check the etcd user, its password and its role's permissions)"));
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::PermissionDeniedError(
          absl::StrCat(msg, " (check the etcd user, its password and its role's permissions)"));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(msg);
    default:
      return common::FromGrpcStatus(grpc::Status(status.error_code(), msg));
  }
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(EtcdClientOptions options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoint given");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_file.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.ca_file, "CA file", "CERTIFICATE"));
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
      return absl::InvalidArgumentError(
          "an etcd client certificate needs both the certificate and the key file");
    }
    if (!options.cert_file.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                       ReadPem(options.cert_file, "certificate file", "CERTIFICATE"));
      ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(options.key_file, "key file", "PRIVATE KEY"));
    }
    credentials = grpc::SslCredentials(ssl);
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(std::move(options)));
  client->credentials_ = credentials;
  for (const std::string& endpoint : client->options_.endpoints) {
    Member m;
    m.endpoint = endpoint;
    m.channel = grpc::CreateCustomChannel(endpoint, credentials, ChannelArgs());
    m.kv = etcdserverpb::KV::NewStub(m.channel);
    m.maintenance = etcdserverpb::Maintenance::NewStub(m.channel);
    m.auth = etcdserverpb::Auth::NewStub(m.channel);
    m.lease = etcdserverpb::Lease::NewStub(m.channel);
    m.watch = etcdserverpb::Watch::NewStub(m.channel);
    client->members_.push_back(std::move(m));
  }
  // One read proves a member answers (and, with a user, that the password is right).
  absl::StatusOr<etcdserverpb::StatusResponse> status = client->Status();
  if (absl::IsUnavailable(status.status())) {
    return absl::UnavailableError(
        absl::StrCat(status.status().message(), client->WhyUnreachable()));
  }
  if (!status.ok()) return status.status();
  return client;
}

std::string EtcdClient::WhyUnreachable() {
  for (const Member& member : members_) {
    // A fresh channel's first call fails with the reason its connection failed (a channel's
    // state has none). Its own subchannel: the members' channels may be between attempts,
    // which ends the attempt this call would share without a reason.
    grpc::ChannelArguments args = ChannelArgs();
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    std::unique_ptr<etcdserverpb::Maintenance::Stub> stub = etcdserverpb::Maintenance::NewStub(
        grpc::CreateCustomChannel(member.endpoint, credentials_, args));
    grpc::ClientContext context;
    context.set_deadline(
        absl::ToChronoTime(absl::Now() + std::min(options_.request_timeout, absl::Seconds(2))));
    etcdserverpb::StatusResponse response;
    const grpc::Status s = stub->Status(&context, etcdserverpb::StatusRequest(), &response);
    if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE) continue;
    const std::string& m = s.error_message();
    std::string hint;
    if (options_.tls) {
      if (absl::StrContains(m, "certificate verify failed")) {
        hint =
            absl::StrCat("TLS: the member's certificate is not signed by ",
                         options_.ca_file.empty() ? "a CA the system trusts (give the etcd CA file)"
                                                  : absl::StrCat("the CA in ", options_.ca_file));
      } else if (absl::StrContains(m, "not in peer certificate")) {
        hint = "TLS: the member's certificate does not name the host or IP address in the URL";
      } else if (absl::StrContains(m, "empty address list")) {
        hint = "TLS: gRPC could not load the TLS files: is the key file the certificate's key?";
      } else if (absl::StrContains(m, "Endpoint read failed") ||
                 absl::StrContains(m, "Socket closed") ||
                 absl::StrContains(m, "Connection reset by peer")) {
        hint = absl::StrCat(
            "TLS: the member closed the connection during the handshake: ",
            options_.cert_file.empty()
                ? "no client certificate was given, and a cluster run with --client-cert-auth "
                  "refuses a client without one"
                : absl::StrCat("it did not accept the client certificate ", options_.cert_file,
                               ", which must be signed by a CA in the cluster's --trusted-ca-file"),
            "; or it does not serve TLS, and then the URL is etcd://");
      }
    } else if (absl::StrContains(m, "Socket closed") ||
               absl::StrContains(m, "Connection reset by peer")) {
      hint =
          "the member closed the connection, as one that serves TLS does to a plain client: use "
          "etcds:// with the etcd CA file";
    }
    return absl::StrCat("; ", member.endpoint, " said: ", m, hint.empty() ? "" : " (", hint,
                        hint.empty() ? "" : ")");
  }
  return "";
}

EtcdClient::~EtcdClient() = default;

bool EtcdClient::Connected(Member& member, absl::Time deadline) {
  grpc_connectivity_state state = member.channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) return false;
    // Idle or connecting: a fresh channel, or a member coming back.
    const absl::Time until = std::min(deadline, absl::Now() + absl::Seconds(1));
    if (!member.channel->WaitForStateChange(state, absl::ToChronoTime(until))) return false;
    state = member.channel->GetState(true);
  }
  return true;
}

absl::Status EtcdClient::Authenticate(Member& member, absl::Time deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  etcdserverpb::AuthenticateRequest request;
  request.set_name(options_.user);
  request.set_password(options_.password);
  etcdserverpb::AuthenticateResponse response;
  grpc::Status s = member.auth->Authenticate(&context, request, &response);
  if (!s.ok()) {
    return FromEtcdStatus(
        s, absl::StrCat("etcd authentication as ", options_.user, " at ", member.endpoint));
  }
  absl::MutexLock lock(&token_mu_);
  token_ = response.token();
  return absl::OkStatus();
}

void EtcdClient::SetAuth(grpc::ClientContext& context, absl::Time deadline) {
  context.set_deadline(absl::ToChronoTime(deadline));
  absl::MutexLock lock(&token_mu_);
  if (!token_.empty()) context.AddMetadata("token", token_);
}

template <typename Response, typename Call>
absl::StatusOr<Response> EtcdClient::Invoke(absl::string_view what, bool idempotent, Call call,
                                            std::optional<absl::Duration> timeout) {
  const absl::Time deadline = absl::Now() + timeout.value_or(options_.request_timeout);
  const size_t n = members_.size();
  size_t index = current_.load(std::memory_order_relaxed) % n;
  absl::Status last = absl::UnavailableError("no member was tried");
  bool authenticated_now = false;
  size_t failed_in_a_row = 0;
  while (absl::Now() < deadline) {
    Member& member = members_[index];
    if (!Connected(member, deadline)) {
      last = absl::UnavailableError(absl::StrCat(member.endpoint, " is not reachable"));
    } else {
      if (!options_.user.empty()) {
        bool need_token;
        {
          absl::MutexLock lock(&token_mu_);
          need_token = token_.empty();
        }
        if (need_token) {
          absl::Status auth = Authenticate(member, deadline);
          if (absl::IsPermissionDenied(auth)) return auth;
          if (!auth.ok()) last = auth;
        }
      }
      grpc::ClientContext context;
      SetAuth(context, deadline);
      Response response;
      grpc::Status s = call(member, &context, &response);
      if (s.ok()) {
        current_.store(index, std::memory_order_relaxed);
        return response;
      }
      if (TokenExpired(s) && !options_.user.empty() && !authenticated_now) {
        // Refused before anything was applied: renew the token and send it again.
        authenticated_now = true;
        {
          absl::MutexLock lock(&token_mu_);
          token_.clear();
        }
        continue;
      }
      const bool transport = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
      if (!transport) return FromEtcdStatus(s, absl::StrCat(what, " at ", member.endpoint));
      if (!idempotent && !RefusedBeforeProposal(s)) {
        return absl::UnavailableError(absl::StrCat(
            what, " at ", member.endpoint, " failed after it was sent (", s.error_message(),
            "): the outcome is unknown; read the state again before repeating it"));
      }
      last = FromEtcdStatus(s, absl::StrCat(what, " at ", member.endpoint));
    }
    index = (index + 1) % n;
    // After a whole round of failures, give the cluster a moment (an election takes about a
    // second) instead of spinning.
    if (++failed_in_a_row % n == 0) absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError(absl::StrCat("no etcd member (",
                                             absl::StrJoin(options_.endpoints, ","), ") answered ",
                                             what, " in time; last error: ", last.message()));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  return Invoke<etcdserverpb::RangeResponse>(
      "etcd Range", /*idempotent=*/true,
      [&](Member& m, grpc::ClientContext* context, etcdserverpb::RangeResponse* response) {
        return m.kv->Range(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request, absl::Duration timeout) {
  return Invoke<etcdserverpb::RangeResponse>(
      "etcd Range", /*idempotent=*/true,
      [&](Member& m, grpc::ClientContext* context, etcdserverpb::RangeResponse* response) {
        return m.kv->Range(context, request, response);
      },
      timeout);
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request) {
  return Invoke<etcdserverpb::TxnResponse>(
      "etcd Txn", /*idempotent=*/false,
      [&](Member& m, grpc::ClientContext* context, etcdserverpb::TxnResponse* response) {
        return m.kv->Txn(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::StatusResponse> EtcdClient::Status() {
  return Invoke<etcdserverpb::StatusResponse>(
      "etcd Status", /*idempotent=*/true,
      [&](Member& m, grpc::ClientContext* context, etcdserverpb::StatusResponse* response) {
        return m.maintenance->Status(context, etcdserverpb::StatusRequest(), response);
      });
}

std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
EtcdClient::OpenWatch(grpc::ClientContext* context) {
  const absl::Time deadline = absl::Now() + options_.request_timeout;
  const size_t n = members_.size();
  for (size_t tried = 0; tried < n; ++tried) {
    const size_t index = (current_.load(std::memory_order_relaxed) + tried) % n;
    Member& member = members_[index];
    if (!Connected(member, deadline)) continue;
    if (!options_.user.empty()) {
      bool need_token;
      {
        absl::MutexLock lock(&token_mu_);
        need_token = token_.empty();
      }
      if (need_token && !Authenticate(member, deadline).ok()) continue;
      absl::MutexLock lock(&token_mu_);
      context->AddMetadata("token", token_);
    }
    // etcd refuses watches without a leader unless asked to wait for one.
    context->AddMetadata("hasleader", "true");
    return member.watch->Watch(context);
  }
  return nullptr;
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(int64_t ttl_seconds) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  // A lease nobody learned of expires on its own: granting again is harmless.
  ASSIGN_OR_RETURN(
      etcdserverpb::LeaseGrantResponse response,
      Invoke<etcdserverpb::LeaseGrantResponse>(
          "etcd LeaseGrant", /*idempotent=*/true,
          [&](Member& m, grpc::ClientContext* context, etcdserverpb::LeaseGrantResponse* out) {
            return m.lease->LeaseGrant(context, request, out);
          }));
  if (!response.error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd LeaseGrant: ", response.error()));
  }
  return response.id();
}

absl::Status EtcdClient::LeaseRevoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  return Invoke<etcdserverpb::LeaseRevokeResponse>(
             "etcd LeaseRevoke", /*idempotent=*/true,
             [&](Member& m, grpc::ClientContext* context, etcdserverpb::LeaseRevokeResponse* out) {
               return m.lease->LeaseRevoke(context, request, out);
             })
      .status();
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAlive(int64_t id) {
  ASSIGN_OR_RETURN(
      etcdserverpb::LeaseKeepAliveResponse response,
      Invoke<etcdserverpb::LeaseKeepAliveResponse>(
          "etcd LeaseKeepAlive", /*idempotent=*/true,
          [&](Member& m, grpc::ClientContext* context, etcdserverpb::LeaseKeepAliveResponse* out) {
            // One round on the bidirectional stream etcd offers for keep-alives.
            auto stream = m.lease->LeaseKeepAlive(context);
            etcdserverpb::LeaseKeepAliveRequest request;
            request.set_id(id);
            if (!stream->Write(request) || !stream->WritesDone() || !stream->Read(out)) {
              grpc::Status s = stream->Finish();
              return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream ended")
                            : s;
            }
            return stream->Finish();
          }));
  return response.ttl();
}

}  // namespace storage
