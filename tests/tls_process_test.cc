// TLS on the coordinator's gRPC and HTTP ports (--tls_cert_file, --tls_key_file), with a
// self-signed certificate each test makes with the openssl CLI: a TLS client that trusts it gets
// answers, a plaintext client gets none, the agent card is served over HTTPS and names an https
// interface, and a missing, unreadable, malformed or mismatched pair is a clear start error.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/a2a_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::BinaryPath;
using ::testing_util::CallContext;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

constexpr char kOpenssl[] = "/usr/bin/openssl";

// Makes a self-signed certificate for 127.0.0.1 and localhost: <prefix>cert.pem, <prefix>key.pem.
void MakeCertificate(const TempDir& dir, const std::string& prefix) {
  absl::StatusOr<ProcessResult> made = RunProcess(
      kOpenssl, {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                 "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout",
                 dir.Sub(prefix + "key.pem"), "-out", dir.Sub(prefix + "cert.pem")});
  ASSERT_OK(made);
  ASSERT_EQ(made->exit_code, 0) << made->Describe();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The port of the "agent card on http(s)://host:PORT/..." log line.
int CardPort(CoordinatorProcess& coordinator) {
  absl::StatusOr<std::string> line =
      coordinator.process().WaitForStderrLine("agent card on", absl::Seconds(30));
  EXPECT_OK(line);
  if (!line.ok()) return 0;
  const size_t end = line->find("/.well-known");
  const size_t colon = line->rfind(':', end);
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(line->substr(colon + 1, end - colon - 1), &port)) << *line;
  return port;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MakeCertificate(dir_, ""));
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator = CoordinatorProcess::Start(
        dir_.Sub("data"),
        {"--tls_cert_file=" + dir_.Sub("cert.pem"), "--tls_key_file=" + dir_.Sub("key.pem")});
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
};

TEST_F(TlsTest, TlsClientThatTrustsTheCertificateGetsAnswers) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir_.Sub("cert.pem"));
  auto stub = coordinator::v1::ContextService::NewStub(
      grpc::CreateChannel(coordinator_->target(), grpc::SslCredentials(ssl)));
  coordinator::v1::CreateContextRequest create;
  create.mutable_context()->set_context_id("over-tls");
  coordinator::v1::TaskContext created;
  const grpc::Status status = stub->CreateContext(CallContext().get(), create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(created.version(), 1);

  // The same name resolves through the SAN's DNS entry too.
  auto by_name = coordinator::v1::ContextService::NewStub(grpc::CreateChannel(
      absl::StrCat("localhost:", coordinator_->port()), grpc::SslCredentials(ssl)));
  coordinator::v1::GetContextRequest get;
  get.set_context_id("over-tls");
  coordinator::v1::TaskContext got;
  const grpc::Status read = by_name->GetContext(CallContext().get(), get, &got);
  ASSERT_TRUE(read.ok()) << read.error_message();
  EXPECT_EQ(got.context_id(), "over-tls");
}

TEST_F(TlsTest, PlaintextAndUntrustingClientsAreRefused) {
  auto plain = coordinator::v1::ContextService::NewStub(
      grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials()));
  coordinator::v1::CreateContextRequest create;
  create.mutable_context()->set_context_id("plaintext");
  coordinator::v1::TaskContext created;
  const grpc::Status status =
      plain->CreateContext(CallContext(absl::Seconds(5)).get(), create, &created);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();

  // A TLS client that does not trust the certificate (another one as its root) is refused too.
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(dir_, "other-"));
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir_.Sub("other-cert.pem"));
  auto untrusting = coordinator::v1::ContextService::NewStub(
      grpc::CreateChannel(coordinator_->target(), grpc::SslCredentials(ssl)));
  EXPECT_FALSE(
      untrusting->CreateContext(CallContext(absl::Seconds(5)).get(), create, &created).ok());

  // Neither created anything: a trusting client does not find it.
  grpc::SslCredentialsOptions trusting;
  trusting.pem_root_certs = ReadFile(dir_.Sub("cert.pem"));
  auto stub = coordinator::v1::ContextService::NewStub(
      grpc::CreateChannel(coordinator_->target(), grpc::SslCredentials(trusting)));
  coordinator::v1::GetContextRequest get;
  get.set_context_id("plaintext");
  coordinator::v1::TaskContext got;
  EXPECT_EQ(stub->GetContext(CallContext().get(), get, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(TlsTest, AgentCardIsServedOverHttpsOnly) {
  const int http_port = CardPort(*coordinator_);
  ASSERT_GT(http_port, 0);
  {
    httplib::SSLClient https("127.0.0.1", http_port);
    https.set_ca_cert_path(dir_.Sub("cert.pem").c_str());
    https.enable_server_certificate_verification(true);
    https.set_connection_timeout(10);
    https.set_read_timeout(10);
    httplib::Result res = https.Get("/.well-known/agent-card.json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_THAT(res->body, HasSubstr("\"name\":\"coordinator\""));
  }
  {
    // coordctl without TLS cannot talk to the gRPC port either.
    absl::StatusOr<ProcessResult> health = RunProcess(
        BinaryPath("coordctl"), {"--target", coordinator_->target(), "--timeout", "5s", "health"},
        absl::Seconds(30));
    ASSERT_OK(health);
    EXPECT_NE(health->exit_code, 0) << health->Describe();
    // The same coordctl that trusts the certificate gets through, so the refusal above is TLS.
    absl::StatusOr<ProcessResult> trusted =
        RunProcess(BinaryPath("coordctl"),
                   {"--target", coordinator_->target(), "--tls-ca-file", dir_.Sub("cert.pem"),
                    "--timeout", "5s", "health"},
                   absl::Seconds(30));
    ASSERT_OK(trusted);
    EXPECT_EQ(trusted->exit_code, 0) << trusted->Describe();
  }
  {
    httplib::Client plain("127.0.0.1", http_port);
    plain.set_connection_timeout(5);
    plain.set_read_timeout(5);
    httplib::Result res = plain.Get("/.well-known/agent-card.json");
    EXPECT_TRUE(!res || res->status != 200);
  }
}

TEST_F(TlsTest, CardInterfacesAreHttpsUrls) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir_.Sub("cert.pem"));
  auto channel = grpc::CreateChannel(coordinator_->target(), grpc::SslCredentials(ssl));
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("away");
  reg.mutable_agent()->set_endpoint("127.0.0.1:1");
  coordinator::v1::Agent agent;
  const grpc::Status status = registry->RegisterAgent(CallContext().get(), reg, &agent);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const int http_port = CardPort(*coordinator_);
  ASSERT_GT(http_port, 0);
  httplib::SSLClient https("127.0.0.1", http_port);
  https.set_ca_cert_path(dir_.Sub("cert.pem").c_str());
  https.enable_server_certificate_verification(true);
  httplib::Result res = https.Get("/.well-known/agent-card.json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_THAT(res->body,
              HasSubstr(absl::StrCat("\"url\":\"https://127.0.0.1:", coordinator_->port(), "\"")));
  EXPECT_THAT(res->body, HasSubstr("\"tenant\":\"away\""));
}

// Runs the coordinator with `flags` and expects a start error that mentions `needle`.
void ExpectStartError(const TempDir& dir, const std::vector<std::string>& flags,
                      const std::string& needle) {
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                   "--data_dir=" + dir.Sub("data")};
  args.insert(args.end(), flags.begin(), flags.end());
  absl::StatusOr<ProcessResult> result =
      RunProcess(BinaryPath("coordinator"), args, absl::Seconds(60));
  ASSERT_OK(result);
  EXPECT_TRUE(result->exited()) << result->Describe();
  EXPECT_NE(result->exit_code, 0) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr(needle)) << result->Describe();
  EXPECT_THAT(result->err, Not(HasSubstr("listening on"))) << result->Describe();
}

TEST(TlsStartTest, BadCertificateOrKeyIsAClearStartError) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(dir, "a-"));
  ASSERT_NO_FATAL_FAILURE(MakeCertificate(dir, "b-"));
  std::ofstream(dir.Sub("garbage.pem")) << "not a certificate\n";
  const std::string cert = "--tls_cert_file=" + dir.Sub("a-cert.pem");
  const std::string key = "--tls_key_file=" + dir.Sub("a-key.pem");

  ExpectStartError(dir, {cert}, "go together");
  ExpectStartError(dir, {key}, "go together");
  ExpectStartError(dir, {cert, "--tls_key_file=" + dir.Sub("missing.pem")}, "cannot read");
  ExpectStartError(dir, {"--tls_cert_file=" + dir.Sub("missing.pem"), key}, "cannot read");
  ExpectStartError(dir, {"--tls_cert_file=" + dir.Sub("garbage.pem"), key}, "no PEM certificate");
  ExpectStartError(dir, {cert, "--tls_key_file=" + dir.Sub("garbage.pem")}, "no unencrypted PEM");
  // A directory is not a readable file.
  ExpectStartError(dir, {"--tls_cert_file=" + dir.Sub(""), key}, "tls_cert_file");
  ExpectStartError(dir, {cert, "--tls_key_file=" + dir.Sub("b-key.pem")},
                   "does not belong to the certificate");
  // The good pair starts (and the data dir was left usable by the refusals).
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> ok =
      CoordinatorProcess::Start(dir.Sub("data"), {cert, key});
  ASSERT_OK(ok);
}

}  // namespace
