// Several replicas behind one DNS name (issue 21: clients take "--target a,b,c or a DNS name with
// several addresses"). Two coordinator replicas on one etcd data set listen on the same port, on
// 127.0.0.1 and 127.0.0.2; a DNS server of the test's own (UDP on a free loopback port) answers
// for one name with both addresses. Given dns://<that server>/<name>:<port>, gRPC's c-ares
// resolver asks that server (common/grpc_client.h leaves a name to it), and coordctl and a
// long-lived client channel keep working after the replica they used is killed -9. Starts its
// own one-member etcd cluster; skipped where etcd is not installed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_client.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/a2a_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = ::coordinator::v1;
using testing_util::BinaryPath;
using ::testing_util::CallContext;
using testing_util::CoordinatorProcess;
using testing_util::EtcdCluster;
using ::testing_util::kProcessWait;
using testing_util::ProcessResult;
using testing_util::RunProcess;
using testing_util::TempDir;
using testing_util::WaitFor;

constexpr char kName[] = "coordinators.test";
constexpr uint16_t kTypeA = 1;

// An authoritative DNS server for one name on 127.0.0.1 (UDP, a free port): A queries for the
// name get every address given, other queries for it an empty answer, other names NXDOMAIN.
// Malformed packets get no answer. Counts the queries it answered, by type.
class LoopbackDns {
 public:
  LoopbackDns(std::string name, std::vector<std::string> addresses)
      : name_(absl::AsciiStrToLower(name)), addresses_(std::move(addresses)) {}
  ~LoopbackDns() { Stop(); }
  LoopbackDns(const LoopbackDns&) = delete;
  LoopbackDns& operator=(const LoopbackDns&) = delete;

  [[nodiscard]] absl::Status Start() {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd_ < 0) return absl::InternalError("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return absl::InternalError("bind 127.0.0.1:0/udp");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
    return absl::OkStatus();
  }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  int port() const { return port_; }
  int queries(uint16_t type) {
    absl::MutexLock lock(&mu_);
    return queries_[type];
  }

 private:
  void Serve() {
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      uint8_t packet[512];
      sockaddr_in peer{};
      socklen_t peer_len = sizeof(peer);
      const ssize_t n =
          recvfrom(fd_, packet, sizeof(packet), 0, reinterpret_cast<sockaddr*>(&peer), &peer_len);
      if (n <= 0) continue;
      std::string reply = Answer(packet, static_cast<size_t>(n));
      if (reply.empty()) continue;
      (void)sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&peer),
                   peer_len);
    }
  }

  // The reply to one query (RFC 1035, section 4), or "" when it is not one.
  std::string Answer(const uint8_t* q, size_t size) {
    auto u16 = [&](size_t at) { return static_cast<uint16_t>(q[at] << 8 | q[at + 1]); };
    if (size < 12 || (q[2] & 0x80) != 0 || u16(4) != 1) return "";  // a query of one question
    size_t at = 12;
    std::string name;
    while (at < size && q[at] != 0) {
      const size_t label = q[at];
      if (label > 63 || at + 1 + label >= size) return "";  // no compression in a question
      if (!name.empty()) name += '.';
      name.append(reinterpret_cast<const char*>(q + at + 1), label);
      at += 1 + label;
    }
    if (at + 5 > size) return "";
    const uint16_t type = u16(at + 1);
    const size_t question_end = at + 5;
    const bool ours = absl::AsciiStrToLower(name) == name_;
    {
      absl::MutexLock lock(&mu_);
      ++queries_[type];
    }
    auto put16 = [](std::string* out, uint16_t v) {
      out->push_back(static_cast<char>(v >> 8));
      out->push_back(static_cast<char>(v & 0xff));
    };
    std::string reply(reinterpret_cast<const char*>(q), 2);  // the query's id
    // QR, AA, the query's RD, RA; NXDOMAIN for a name not ours.
    put16(&reply, static_cast<uint16_t>(0x8480 | (q[2] & 0x01) << 8 | (ours ? 0 : 3)));
    const bool answer = ours && type == kTypeA;
    put16(&reply, 1);
    put16(&reply, answer ? static_cast<uint16_t>(addresses_.size()) : 0);
    put16(&reply, 0);
    put16(&reply, 0);
    reply.append(reinterpret_cast<const char*>(q + 12), question_end - 12);
    if (!answer) return reply;
    for (const std::string& address : addresses_) {
      in_addr a{};
      if (inet_pton(AF_INET, address.c_str(), &a) != 1) continue;
      put16(&reply, 0xc00c);  // the name: a pointer to the question's
      put16(&reply, kTypeA);
      put16(&reply, 1);  // IN
      put16(&reply, 0);  // TTL 0: never cached
      put16(&reply, 0);
      put16(&reply, 4);
      reply.append(reinterpret_cast<const char*>(&a.s_addr), 4);
    }
    return reply;
  }

  const std::string name_;
  const std::vector<std::string> addresses_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::map<uint16_t, int> queries_ ABSL_GUARDED_BY(mu_);
};

// A TCP port that is free on both 127.0.0.1 and 127.0.0.2 right now.
absl::StatusOr<int> PortFreeOnBoth() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    int port = 0;
    bool ok = true;
    int fds[2] = {-1, -1};
    for (int i = 0; i < 2 && ok; ++i) {
      fds[i] = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, i == 0 ? "127.0.0.1" : "127.0.0.2", &addr.sin_addr);
      socklen_t len = sizeof(addr);
      ok = fds[i] >= 0 && bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
           getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len) == 0;
      if (ok) port = ntohs(addr.sin_port);
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
    if (ok) return port;
  }
  return absl::UnavailableError("no port free on both 127.0.0.1 and 127.0.0.2");
}

class DnsTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster =
        EtcdCluster::Start(dir_.Sub("etcd"), /*members=*/1);
    if (absl::IsUnimplemented(cluster.status())) GTEST_SKIP() << cluster.status();
    ASSERT_OK(cluster);
    cluster_ = *std::move(cluster);
    // Both replicas on one port, each on its own address; a port taken meanwhile by someone
    // else makes a replica fail to start: another port is tried.
    for (int attempt = 0; attempt < 3 && replicas_[1] == nullptr; ++attempt) {
      absl::StatusOr<int> port = PortFreeOnBoth();
      ASSERT_OK(port);
      port_ = *port;
      for (int i = 0; i < 2; ++i) {
        absl::StatusOr<std::unique_ptr<CoordinatorProcess>> replica =
            CoordinatorProcess::Start(dir_.Sub(absl::StrCat("replica", i, "-", attempt)),
                                      {"--store=" + cluster_->url(), "--etcd_prefix=/dns/",
                                       absl::StrCat("--listen=", kAddresses[i], ":", port_),
                                       absl::StrCat("--replica_name=", kAddresses[i])});
        if (!replica.ok()) {
          replicas_[0].reset();
          break;
        }
        replicas_[i] = *std::move(replica);
      }
    }
    ASSERT_NE(replicas_[1], nullptr) << "the replicas did not start";
    ASSERT_OK(dns_.Start());
  }

  // dns://<the test's DNS server>/<name>:<port of both replicas>
  std::string Target(const std::string& name = kName) const {
    return absl::StrCat("dns://127.0.0.1:", dns_.port(), "/", name, ":", port_);
  }

  // coordctl with `target`; a failure to connect fails within `timeout`.
  static absl::StatusOr<ProcessResult> Coordctl(const std::string& target,
                                                const std::vector<std::string>& args,
                                                const std::string& timeout = "30s") {
    std::vector<std::string> full = {"--target", target, "--timeout", timeout};
    full.insert(full.end(), args.begin(), args.end());
    return RunProcess(BinaryPath("coordctl"), full, absl::Seconds(60));
  }

  static constexpr const char* kAddresses[2] = {"127.0.0.1", "127.0.0.2"};

  TempDir dir_;
  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<CoordinatorProcess> replicas_[2];
  int port_ = 0;
  LoopbackDns dns_{kName, {kAddresses[0], kAddresses[1]}};
};

TEST_F(DnsTargetTest, ClientsMoveToTheNextAddressWhenTheReplicaTheyUseIsKilled) {
  absl::StatusOr<ProcessResult> put =
      Coordctl(Target(), {"context", "put", "dns-1", "--agent", "green"});
  ASSERT_OK(put);
  ASSERT_EQ(put->exit_code, 0) << put->Describe();
  // The name was resolved by the test's server, not by /etc/hosts or the system's resolver.
  EXPECT_GT(dns_.queries(kTypeA), 0);

  // One channel for the whole test, as an agent or a long-running client holds it.
  std::shared_ptr<grpc::Channel> channel = common::MakeChannel(Target(), {});
  auto contexts = v1::ContextService::NewStub(channel);
  v1::GetContextRequest get;
  get.set_context_id("dns-1");
  std::string used;
  {
    auto ctx = CallContext();
    v1::TaskContext context;
    grpc::Status s = contexts->GetContext(ctx.get(), get, &context);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(context.agent(), "green");
    used = ctx->peer();  // ipv4:127.0.0.X:port
  }
  int victim = -1;
  for (int i = 0; i < 2; ++i) {
    if (absl::StrContains(used, absl::StrCat(kAddresses[i], ":", port_))) victim = i;
  }
  ASSERT_GE(victim, 0) << "the channel is connected to " << used;
  ASSERT_OK(replicas_[victim]->Kill());

  // The channel moves to the other address; a call that met the dead connection is sent again,
  // as the clients do on UNAVAILABLE.
  std::string now_used;
  v1::TaskContext context;
  grpc::Status last;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto ctx = CallContext();
        last = contexts->GetContext(ctx.get(), get, &context);
        if (!last.ok()) return false;
        now_used = ctx->peer();
        return true;
      },
      kProcessWait))
      << last.error_message();
  EXPECT_TRUE(absl::StrContains(now_used, absl::StrCat(kAddresses[1 - victim], ":", port_)))
      << now_used;
  EXPECT_EQ(context.agent(), "green");

  // A new coordctl process gets past the dead address, and reads and writes the same data.
  absl::StatusOr<ProcessResult> read = Coordctl(Target(), {"context", "get", "dns-1", "--json"});
  ASSERT_OK(read);
  EXPECT_EQ(read->exit_code, 0) << read->Describe();
  EXPECT_TRUE(absl::StrContains(read->out, "green")) << read->out;
  put = Coordctl(Target(), {"context", "put", "dns-2", "--agent", "purple"});
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 0) << put->Describe();
  v1::GetContextRequest get2;
  get2.set_context_id("dns-2");
  grpc::Status s = contexts->GetContext(CallContext().get(), get2, &context);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(context.agent(), "purple");
}

TEST_F(DnsTargetTest, ANameThatDoesNotResolveIsAClearErrorAndChangesNothing) {
  absl::StatusOr<ProcessResult> put =
      Coordctl(Target("nowhere.test"), {"context", "put", "dns-bad", "--agent", "green"}, "3s");
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 3) << put->Describe();
  EXPECT_TRUE(absl::StrContains(put->err, "DNS resolution failed for nowhere.test")) << put->err;
  EXPECT_GT(dns_.queries(kTypeA), 0);
  absl::StatusOr<ProcessResult> get = Coordctl(Target(), {"context", "get", "dns-bad"});
  ASSERT_OK(get);
  EXPECT_EQ(get->exit_code, 1) << get->Describe();  // not found
  // No DNS server at the address given: the same.
  absl::StatusOr<int> silent = PortFreeOnBoth();
  ASSERT_OK(silent);
  put = Coordctl(absl::StrCat("dns://127.0.0.1:", *silent, "/", kName, ":", port_),
                 {"context", "put", "dns-bad", "--agent", "green"}, "2s");
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 3) << put->Describe();
  get = Coordctl(Target(), {"context", "get", "dns-bad"});
  ASSERT_OK(get);
  EXPECT_EQ(get->exit_code, 1) << get->Describe();
}

}  // namespace
