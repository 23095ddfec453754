#include "common/grpc_client.h"

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           const ClientCredentialOptions& options,
                                           const grpc::ChannelArguments& args) {
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
