#include "coordinator/rpc/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace coordinator {
namespace {

// TLS files are small; anything larger is not a certificate or a key.
constexpr std::streamsize kMaxPemBytes = 1 << 20;

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
  }
  std::string text(kMaxPemBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read ", path));
  }
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > static_cast<size_t>(kMaxPemBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", path, " is larger than ", kMaxPemBytes, " bytes"));
  }
  return text;
}

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (code == 0) return "no PEM block found";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

// Refuses a passphrase: OpenSSL's default would prompt on the terminal of a daemon.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*user*/) { return -1; }

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

}  // namespace

absl::StatusOr<std::optional<ServerTls>> LoadServerTls(const std::string& cert_file,
                                                       const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) return std::nullopt;
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together: give both (TLS) or neither (plaintext)");
  }
  ServerTls tls;
  tls.cert_file = cert_file;
  tls.key_file = key_file;
  absl::StatusOr<std::string> cert = ReadPem("tls_cert_file", cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls_key_file", key_file);
  if (!key.ok()) return key.status();
  tls.cert_pem = *std::move(cert);
  tls.key_pem = *std::move(key);

  ERR_clear_error();
  std::unique_ptr<BIO, BioFree> cert_bio(
      BIO_new_mem_buf(tls.cert_pem.data(), static_cast<int>(tls.cert_pem.size())));
  std::unique_ptr<X509, X509Free> x509(
      PEM_read_bio_X509(cert_bio.get(), nullptr, NoPassphrase, nullptr));
  if (x509 == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_cert_file: ", cert_file, " holds no PEM certificate (", OpenSslError(), ")"));
  }
  std::unique_ptr<BIO, BioFree> key_bio(
      BIO_new_mem_buf(tls.key_pem.data(), static_cast<int>(tls.key_pem.size())));
  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key_file: ", key_file,
                                                   " holds no unencrypted PEM private key (",
                                                   OpenSslError(), ")"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls_key_file: the key in ", key_file,
                                                   " does not belong to the certificate in ",
                                                   cert_file));
  }
  return tls;
}

}  // namespace coordinator
