#include "common/grpc_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/reconnect.h"
#include "grpcpp/support/client_interceptor.h"

namespace common {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

absl::StatusOr<std::string> ReadSmallFile(const std::string& what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": cannot read it"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": read error"));
  std::string data = text.str();
  if (data.size() > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": larger than ", kMaxFileBytes, " bytes"));
  }
  return data;
}

// Adds the authorization metadata to every call of the channel.
class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;  // owned by the factory, which the channel keeps
};

class BearerInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(const std::string& token)
      : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

absl::StatusOr<ClientCredentialOptions> LoadClientCredentials(const std::string& auth_token_file,
                                                              const std::string& tls_ca_file) {
  ClientCredentialOptions options;
  if (!auth_token_file.empty()) {
    absl::StatusOr<std::string> token = ReadSmallFile("auth token file", auth_token_file);
    if (!token.ok()) return token.status();
    const absl::string_view stripped = absl::StripAsciiWhitespace(*token);
    if (stripped.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("auth token file ", auth_token_file, " is empty"));
    }
    for (char c : stripped) {
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(
            absl::StrCat("auth token file ", auth_token_file,
                         " must hold one token: visible ASCII characters without spaces"));
      }
    }
    options.auth_token = std::string(stripped);
  }
  if (!tls_ca_file.empty()) {
    absl::StatusOr<std::string> pem = ReadSmallFile("TLS CA file", tls_ca_file);
    if (!pem.ok()) return pem.status();
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS CA file ", tls_ca_file, " holds no PEM certificate"));
    }
    options.tls_ca_pem = *std::move(pem);
  }
  return options;
}

absl::StatusOr<ExpandedTarget> ExpandTarget(const std::string& target) {
  if (target.find(',') == std::string::npos) return ExpandedTarget{target, ""};
  std::vector<std::string> v4, v6;
  std::string authority;
  for (absl::string_view entry : absl::StrSplit(target, ',')) {
    const size_t colon = entry.rfind(':');
    int port = 0;
    if (entry.empty() || colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(entry.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("target list '", target, "': '", entry, "' is not host:port"));
    }
    if (authority.empty()) authority = std::string(entry);
    std::string host(entry.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    in_addr a4;
    in6_addr a6;
    if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
      v4.push_back(absl::StrCat(host, ":", port));
      continue;
    }
    if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
      v6.push_back(absl::StrCat("[", host, "]:", port));
      continue;
    }
    // A name: its IPv4 addresses, or its IPv6 ones when it has none (a name such as
    // localhost often has both, and one list holds one family).
    bool resolved = false;
    int rc = 0;
    for (int family : {AF_INET, AF_INET6}) {
      addrinfo hints{};
      hints.ai_family = family;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
      if (rc != 0 || found == nullptr) continue;
      for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        if (ai->ai_family == AF_INET) {
          inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, text,
                    sizeof(text));
          v4.push_back(absl::StrCat(text, ":", port));
        } else if (ai->ai_family == AF_INET6) {
          inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, text,
                    sizeof(text));
          v6.push_back(absl::StrCat("[", text, "]:", port));
        }
      }
      freeaddrinfo(found);
      resolved = true;
      break;
    }
    if (!resolved) {
      return absl::InvalidArgumentError(absl::StrCat("target list '", target, "': cannot resolve '",
                                                     host, "': ", gai_strerror(rc)));
    }
  }
  if (!v4.empty() && !v6.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target list '", target, "' mixes IPv4 and IPv6 addresses; list one family"));
  }
  // Each address once, in order.
  std::vector<std::string>& all = v4.empty() ? v6 : v4;
  std::vector<std::string> unique;
  for (std::string& a : all) {
    if (std::find(unique.begin(), unique.end(), a) == unique.end()) unique.push_back(std::move(a));
  }
  return ExpandedTarget{absl::StrCat(v4.empty() ? "ipv6:" : "ipv4:", absl::StrJoin(unique, ",")),
                        authority};
}

std::string LocalDialTarget(const std::string& listen_address) {
  if (absl::StartsWith(listen_address, "0.0.0.0:")) return "127.0.0.1:" + listen_address.substr(8);
  if (absl::StartsWith(listen_address, "[::]:")) return "[::1]:" + listen_address.substr(5);
  return listen_address;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& given_target,
                                           const ClientCredentialOptions& options,
                                           const grpc::ChannelArguments& given_args) {
  std::string target = given_target;
  grpc::ChannelArguments args = given_args;
  absl::StatusOr<ExpandedTarget> expanded = ExpandTarget(given_target);
  if (!expanded.ok()) {
    LOG_ERROR("%s", expanded.status().message());
  } else if (!expanded->authority.empty()) {
    target = expanded->target;
    // TLS and the :authority header name the first replica, not an address.
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, expanded->authority);
    if (!options.tls_ca_pem.empty()) {
      args.SetSslTargetNameOverride(expanded->authority.substr(0, expanded->authority.rfind(':')));
    }
    // A replica that comes back is used again within a second.
    SetQuickReconnect(args);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls_ca_pem.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  if (options.auth_token.empty()) return grpc::CreateCustomChannel(target, credentials, args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerInterceptorFactory>(options.auth_token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, credentials, args,
                                                                 std::move(interceptors));
}

}  // namespace common
