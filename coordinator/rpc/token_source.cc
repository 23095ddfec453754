#include "coordinator/rpc/token_source.h"

#include <signal.h>
#include <sys/stat.h>

#include <utility>

#include "absl/time/clock.h"
#include "common/log.h"
#include "common/thread_name.h"

namespace coordinator {

absl::StatusOr<std::unique_ptr<TokenSource>> TokenSource::Open(const std::string& path,
                                                               std::vector<std::string>* warnings) {
  if (path.empty()) return absl::InvalidArgumentError("no token file named");
  // The file's identity before reading it: a change made while it is read is seen next time.
  std::unique_ptr<TokenSource> source(new TokenSource(path, nullptr));
  const Identity identity = source->Stat();
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = Authorizer::FromFile(path, warnings);
  if (!authorizer.ok()) return authorizer.status();
  absl::MutexLock lock(&source->mu_);
  source->current_ = *std::move(authorizer);
  source->identity_ = identity;
  return source;
}

TokenSource::TokenSource(std::shared_ptr<const Authorizer> authorizer)
    : TokenSource("", std::move(authorizer)) {}

TokenSource::TokenSource(std::string path, std::shared_ptr<const Authorizer> authorizer)
    : path_(std::move(path)), current_(std::move(authorizer)) {}

TokenSource::~TokenSource() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const Authorizer> TokenSource::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

bool TokenSource::Identity::operator==(const Identity& other) const {
  return exists == other.exists && inode == other.inode && size == other.size &&
         modified.tv_sec == other.modified.tv_sec && modified.tv_nsec == other.modified.tv_nsec &&
         changed.tv_sec == other.changed.tv_sec && changed.tv_nsec == other.changed.tv_nsec;
}

TokenSource::Identity TokenSource::Stat() const {
  Identity identity;
  struct stat info {};
  if (path_.empty() || stat(path_.c_str(), &info) != 0) return identity;
  identity.exists = true;
  identity.inode = info.st_ino;
  identity.size = info.st_size;
  identity.modified = info.st_mtim;
  identity.changed = info.st_ctim;
  return identity;
}

absl::Status TokenSource::Reload() {
  if (path_.empty()) return absl::FailedPreconditionError("these tokens come from no file");
  const Identity identity = Stat();
  std::vector<std::string> warnings;
  absl::StatusOr<std::unique_ptr<Authorizer>> read = Authorizer::FromFile(path_, &warnings);
  std::shared_ptr<const Authorizer> now_in_force;
  {
    absl::MutexLock lock(&mu_);
    // Tried once per version of the file: a bad one is not read (and logged) again each period.
    identity_ = identity;
    if (!read.ok()) {
      LOG_WARN("token file %s not reloaded, the %d tokens read before stay in force: %s", path_,
               static_cast<int>(current_->size()), read.status().message());
      return read.status();
    }
    current_ = *std::move(read);
    now_in_force = current_;
  }
  for (const std::string& warning : warnings) LOG_WARN("%s", warning);
  LOG_INFO("token file %s reloaded: %d tokens", path_, static_cast<int>(now_in_force->size()));
  RevokeStreams(*now_in_force, absl::Now());
  return absl::OkStatus();
}

void TokenSource::StartWatching(absl::Duration period, bool sighup) {
  if (path_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this, period, sighup] {
    common::SetThreadName("token-watch");
    Watch(period, sighup);
  });
}

void TokenSource::Watch(absl::Duration period, bool sighup) {
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  const timespec wait = absl::ToTimespec(period);
  while (true) {
    bool signalled = false;
    if (sighup) {
      signalled = sigtimedwait(&hangup, nullptr, &wait) == SIGHUP;
    } else {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    }
    bool changed;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      changed = !(Stat() == identity_);
    }
    if (signalled) LOG_INFO("SIGHUP: reading the token file %s again", path_);
    if (signalled || changed) {
      if (Reload().ok()) continue;  // it ended the streams it had to
    }
    RevokeStreams(*Current(), absl::Now());  // tokens that expired meanwhile
  }
}

std::unique_ptr<TokenSource::Registration> TokenSource::OnRevoke(const Caller& caller,
                                                                 std::function<void()> abort) {
  if (!caller.authenticated || caller.token_digest.empty()) return nullptr;
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_watcher_++;
  watchers_.emplace(id, Watcher{caller.token_digest, caller.principal, caller.role,
                                caller.token_expires_at, std::move(abort)});
  return std::unique_ptr<Registration>(new Registration(this, id));
}

void TokenSource::Forget(uint64_t id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

void TokenSource::RevokeStreams(const Authorizer& authorizer, absl::Time now) {
  std::vector<std::function<void()>> aborts;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      // A token given to another principal or role ends the streams opened as the old one.
      const Watcher& watcher = it->second;
      if (now < watcher.expires_at &&
          authorizer.Accepts(watcher.token_digest, watcher.principal, watcher.role, now)) {
        ++it;
        continue;
      }
      aborts.push_back(std::move(it->second.abort));
      watchers_.erase(it++);
    }
  }
  for (std::function<void()>& abort : aborts) abort();
}

}  // namespace coordinator
