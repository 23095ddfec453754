#include "coordctl/run_follow.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/v1/work.grpc.pb.h"

namespace coordctl {
namespace {

// The wake pipe's write end for the signal handler (write(2) is async-signal-safe).
std::atomic<int> g_signal_fd{-1};
struct sigaction g_old_int;
struct sigaction g_old_term;

constexpr char kChanged = 'c';
constexpr char kFailed = 'e';
constexpr char kStop = 's';

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(200);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

void OnSignal(int /*signal*/) {
  const int saved = errno;
  const int fd = g_signal_fd.load();
  if (fd >= 0) {
    const ssize_t n = write(fd, &kStop, 1);
    (void)n;  // a full pipe already wakes the reader
  }
  errno = saved;
}

// Milliseconds for poll(2), rounded up so that a wait never ends before its deadline.
int PollMillis(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return 0;
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(d + absl::Microseconds(999)), 60 * 60 * 1000));
}

}  // namespace

bool TransientStatus(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:  // a watch the server ended: watch again
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:           // the server went away mid-call
    case grpc::StatusCode::RESOURCE_EXHAUSTED:  // the watcher fell behind, or too many streams
      return true;
    default:
      return false;
  }
}

grpc::Status GiveUpStatus(const grpc::Status& s, const std::string& what, absl::Duration down,
                          absl::Duration patience) {
  return grpc::Status(
      s.ok() ? grpc::StatusCode::UNAVAILABLE : s.error_code(),
      absl::StrCat(what, ": the coordinator has been unreachable for ",
                   absl::FormatDuration(absl::Trunc(down, absl::Seconds(1))), " (--patience ",
                   absl::FormatDuration(patience), "): ", s.error_message()));
}

RunFollower::RunFollower(const Env& env, std::string run_id, FollowOptions options)
    : env_(env), run_id_(std::move(run_id)), options_(options) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_ = fds[0];
    wake_write_ = fds[1];
  }
  g_signal_fd.store(wake_write_);
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
  thread_ = std::thread([this] { WatchLoop(); });
}

RunFollower::~RunFollower() {
  stopping_.Notify();
  {
    absl::MutexLock lock(&mu_);
    if (context_ != nullptr) context_->TryCancel();
  }
  thread_.join();
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_signal_fd.store(-1);
  if (wake_read_ >= 0) close(wake_read_);
  if (wake_write_ >= 0) close(wake_write_);
}

void RunFollower::Poke(char what) {
  if (wake_write_ < 0) return;
  const ssize_t n = write(wake_write_, &what, 1);
  (void)n;  // EAGAIN: the pipe is full, so the reader wakes anyway
}

grpc::Status RunFollower::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

RunFollower::Wake RunFollower::Wait() {
  const absl::Time poll_at = absl::Now() + options_.poll;
  std::optional<absl::Time> changed_until;  // set by the first change
  while (true) {
    const absl::Time now = absl::Now();
    const absl::Time until = changed_until.has_value() ? *changed_until : poll_at;
    if (now >= until) return changed_until.has_value() ? Wake::kChanged : Wake::kPoll;
    if (wake_read_ < 0) {  // no pipe (pipe2 failed): poll only
      absl::SleepFor(until - now);
      continue;
    }
    struct pollfd p = {wake_read_, POLLIN, 0};
    const int ready = poll(&p, 1, PollMillis(until - now));
    if (ready <= 0) continue;  // timed out (checked above) or EINTR
    char bytes[256];
    const ssize_t n = read(wake_read_, bytes, sizeof(bytes));
    bool failed = false;
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == kStop) return Wake::kStop;
      if (bytes[i] == kFailed) failed = true;
      if (bytes[i] == kChanged && !changed_until.has_value()) {
        changed_until = absl::Now() + options_.coalesce;
      }
    }
    if (failed) return Wake::kFailed;
  }
}

void RunFollower::WatchLoop() {
  auto stub = coordinator::v1::WorkService::NewStub(env_.channel);
  coordinator::v1::WatchRunRequest request;
  request.set_run_id(run_id_);
  absl::Duration backoff = kFirstBackoff;
  std::optional<absl::Time> down_since;  // since when no watch has delivered anything
  while (true) {
    grpc::ClientContext context;  // no deadline: the watch lasts as long as the follow
    {
      absl::MutexLock lock(&mu_);
      if (stopping_.HasBeenNotified()) return;
      context_ = &context;
    }
    std::unique_ptr<grpc::ClientReader<coordinator::v1::RunEvent>> reader =
        stub->WatchRun(&context, request);
    coordinator::v1::RunEvent event;
    while (reader->Read(&event)) {
      down_since.reset();
      backoff = kFirstBackoff;
      // The end of a snapshot counts as a change: the run may have changed while nobody
      // watched (before the first watch, or while the coordinator was away).
      if (event.type() != coordinator::v1::RunEvent::TYPE_SNAPSHOT) Poke(kChanged);
    }
    const grpc::Status s = reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
    }
    if (stopping_.HasBeenNotified()) return;
    const absl::Time now = absl::Now();
    if (!down_since.has_value()) down_since = now;
    if (!TransientStatus(s) || now - *down_since >= options_.patience) {
      const grpc::Status why = TransientStatus(s)
                                   ? GiveUpStatus(s, absl::StrCat("watching run ", run_id_),
                                                  now - *down_since, options_.patience)
                                   : s;
      {
        absl::MutexLock lock(&mu_);
        error_ = why;
      }
      Poke(kFailed);
      return;
    }
    stopping_.WaitForNotificationWithTimeout(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace coordctl
