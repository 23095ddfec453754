// Disk full: the real coordinator on a data dir that is a small tmpfs. Writes go on until the file
// system is full; then every failed write must have answered RESOURCE_EXHAUSTED or UNAVAILABLE
// (the server neither crashed nor acknowledged it), every acknowledged write must still be
// readable, and once space is freed new writes must succeed without a restart. Needs permission
// to mount (root here and in CI); skipped with the reason otherwise.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = coordinator::v1;
using testing_util::CoordinatorProcess;
using testing_util::TempDir;

// RocksDB's own recovery from a full disk waits until one write buffer (64 MiB) is free, so
// the file system is larger than that (also the WAL, preallocated to about that size) and a
// filler file takes most of it.
constexpr size_t kTmpfsBytes = 256 << 20;
// Left free by the filler file: the coordinator's writes fill the rest.
constexpr size_t kHeadroomBytes = 3 << 20;
constexpr size_t kMessageBytes = 64 << 10;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_point_ = dir_.Sub("tmpfs");
    ASSERT_EQ(mkdir(mount_point_.c_str(), 0755), 0) << std::strerror(errno);
    const std::string options = absl::StrCat("size=", kTmpfsBytes);
    if (mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs at " << mount_point_ << " (" << std::strerror(errno)
                   << "); the disk-full test needs root";
    }
    mounted_ = true;
  }

  void TearDown() override {
    server_.reset();  // kills the coordinator if the test did not stop it
    if (mounted_) {
      EXPECT_EQ(umount2(mount_point_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
  }

  // Writes a file of `bytes` zeros; returns how many bytes fitted.
  size_t Fill(const std::string& path, size_t bytes) {
    std::ofstream out(path, std::ios::binary);
    const std::string chunk(1 << 20, '\0');
    size_t written = 0;
    while (written < bytes && out) {
      const size_t n = std::min(chunk.size(), bytes - written);
      out.write(chunk.data(), static_cast<std::streamsize>(n));
      out.flush();
      if (out) written += n;
    }
    return written;
  }

  size_t FreeBytes() {
    std::error_code ec;
    return std::filesystem::space(mount_point_, ec).available;
  }

  // The last part of RocksDB's own log, for failure messages.
  std::string LogTail() {
    std::ifstream in(mount_point_ + "/data/LOG");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > 6000 ? text.substr(text.size() - 6000) : text;
  }

  grpc::Status Append(const std::string& text, v1::AppendMessageResponse* reply) {
    v1::AppendMessageRequest request;
    request.set_context_id("full");
    request.set_role(v1::ROLE_AGENT);
    request.set_text(text);
    request.set_tokens(1);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    return conversations_->AppendMessage(&context, request, reply);
  }

  // Every acknowledged message, read back by seq.
  void ExpectAckedReadable() {
    v1::GetConversationRequest request;
    request.set_context_id("full");
    request.set_page_size(1000);
    std::map<int64_t, std::string> stored;
    do {
      v1::GetConversationResponse page;
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      grpc::Status s = conversations_->GetConversation(&context, request, &page);
      ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
      for (const v1::ConversationMessage& m : page.messages()) stored[m.seq()] = m.text();
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    for (const auto& [seq, text] : acked_) {
      auto it = stored.find(seq);
      ASSERT_NE(it, stored.end()) << "acknowledged message " << seq << " is gone";
      EXPECT_EQ(it->second, text) << "message " << seq;
    }
  }

  TempDir dir_;
  std::string mount_point_;
  bool mounted_ = false;
  std::unique_ptr<CoordinatorProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ConversationService::Stub> conversations_;
  std::map<int64_t, std::string> acked_;  // seq -> text of every acknowledged append
};

TEST_F(DiskFullTest, WritesFailCleanlyWhenFullAndSucceedAgainWhenSpaceReturns) {
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> server =
      CoordinatorProcess::Start(mount_point_ + "/data");
  ASSERT_OK(server);
  server_ = *std::move(server);
  channel_ = grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials());
  conversations_ = v1::ConversationService::NewStub(channel_);

  // Leave only a little room, then write until the file system is full.
  const std::string filler = mount_point_ + "/filler";
  const size_t free_bytes = FreeBytes();
  ASSERT_GT(free_bytes, kHeadroomBytes);
  Fill(filler, free_bytes - kHeadroomBytes);

  int failures = 0;
  int writes = 0;
  std::map<int, int> failure_codes;
  for (; writes < 2000 && failures < 5; ++writes) {
    const std::string text = absl::StrCat(writes, ":", std::string(kMessageBytes, 'x'));
    v1::AppendMessageResponse reply;
    grpc::Status s = Append(text, &reply);
    if (s.ok()) {
      acked_[reply.message().seq()] = text;
      continue;
    }
    ++failures;
    ++failure_codes[s.error_code()];
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                s.error_code() == grpc::StatusCode::UNAVAILABLE)
        << "a write on a full disk answered " << s.error_code() << ": " << s.error_message();
  }
  ASSERT_EQ(failures, 5) << "the disk never filled after " << writes << " writes";
  ASSERT_FALSE(acked_.empty()) << "nothing fitted before the disk was full";
  ASSERT_FALSE(server_->process().ended()) << "the coordinator died on a full disk:\n"
                                           << server_->process().stderr_text();
  ASSERT_NO_FATAL_FAILURE(ExpectAckedReadable());

  // Space comes back: the same server accepts writes again (it may take it a moment to notice).
  ASSERT_EQ(unlink(filler.c_str()), 0) << std::strerror(errno);
  bool recovered = false;
  grpc::Status last;
  for (int attempt = 0; attempt < 1200 && !recovered;
       ++attempt) {  // up to ~2 min on a busy machine
    const std::string text = absl::StrCat("after:", attempt);
    v1::AppendMessageResponse reply;
    last = Append(text, &reply);
    if (last.ok()) {
      acked_[reply.message().seq()] = text;
      recovered = true;
    } else {
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  ASSERT_TRUE(recovered) << "writes still fail after space was freed: " << last.error_code() << " "
                         << last.error_message() << "\n"
                         << server_->process().stderr_text() << "\n--- RocksDB LOG (end) ---\n"
                         << LogTail();
  for (int i = 0; i < 10; ++i) {
    const std::string text = absl::StrCat("more:", i);
    v1::AppendMessageResponse reply;
    grpc::Status s = Append(text, &reply);
    ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    acked_[reply.message().seq()] = text;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAckedReadable());
  EXPECT_FALSE(server_->process().ended());

  // And everything acknowledged survives a restart.
  absl::StatusOr<testing_util::ProcessResult> stopped = server_->Stop();
  ASSERT_OK(stopped);
  server = CoordinatorProcess::Start(mount_point_ + "/data");
  ASSERT_OK(server);
  server_ = *std::move(server);
  channel_ = grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials());
  conversations_ = v1::ConversationService::NewStub(channel_);
  ASSERT_NO_FATAL_FAILURE(ExpectAckedReadable());
}

}  // namespace
