// The tokens in force, kept current while the coordinator runs (docs/security.md, "Tokens"):
// the token file is read again on SIGHUP and whenever it changes on disk, so a token that was
// removed from it (or has expired) is refused within a second, without a restart. A new file that
// does not read (bad JSON, a duplicate token, ...) is refused with a log line and the tokens
// read before stay in force.
//
// Streams outlive the check made when they opened: a streaming handler registers its stream
// with OnRevoke, and when its token leaves the file or expires, the stream is ended with
// UNAUTHENTICATED.
#ifndef COORDINATOR_RPC_TOKEN_SOURCE_H_
#define COORDINATOR_RPC_TOKEN_SOURCE_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/rpc/auth.h"

namespace coordinator {

class TokenSource {
 public:
  // Reads `path` (Authorizer::FromFile). `warnings` as there.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenSource>> Open(
      const std::string& path, std::vector<std::string>* warnings = nullptr);
  // Fixed tokens that are never read again (tests, and servers assembled in process).
  explicit TokenSource(std::shared_ptr<const Authorizer> authorizer);
  // Stops watching.
  ~TokenSource();

  TokenSource(const TokenSource&) = delete;
  TokenSource& operator=(const TokenSource&) = delete;

  // The tokens in force now.
  std::shared_ptr<const Authorizer> Current() const;

  // Reads the file again now. OK: its tokens are in force, and the streams of tokens it no
  // longer holds are ended. Otherwise the error, and the tokens read before stay in force.
  absl::Status Reload();

  // From now on, every `period`: reloads when the file changed (inode, size, modification or
  // change time), when SIGHUP arrived (`sighup`: the caller blocked SIGHUP in every thread, as
  // coordinator/main.cc does before starting any), and ends the streams whose token expired.
  void StartWatching(absl::Duration period, bool sighup);

  // Ends `abort`'s stream when the token behind `caller` is revoked or expires: `abort` is
  // called at most once, from the watching thread, with nothing locked. Callers that are not
  // authenticated by a token need nothing (null). Drop the returned handle when the stream is
  // done (gRPC's OnDone); an `abort` already under way may still run, so it holds its stream
  // only weakly. The source outlives every handle.
  class Registration;
  [[nodiscard]] std::unique_ptr<Registration> OnRevoke(const Caller& caller,
                                                       std::function<void()> abort);

 private:
  struct Identity {
    bool exists = false;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    timespec changed{};
    bool operator==(const Identity& other) const;
  };
  struct Watcher {
    std::string token_digest;
    std::string principal;
    Role role;
    absl::Time expires_at;
    std::function<void()> abort;
  };

  TokenSource(std::string path, std::shared_ptr<const Authorizer> authorizer);
  Identity Stat() const;
  void Watch(absl::Duration period, bool sighup);
  // Ends (and forgets) the watched streams whose token `authorizer` no longer accepts at `now`.
  void RevokeStreams(const Authorizer& authorizer, absl::Time now);
  void Forget(uint64_t id);

  const std::string path_;  // empty: fixed tokens
  mutable absl::Mutex mu_;
  std::shared_ptr<const Authorizer> current_ ABSL_GUARDED_BY(mu_);
  Identity identity_ ABSL_GUARDED_BY(mu_);  // of the file the tokens in force came from
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_watcher_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class TokenSource::Registration {
 public:
  ~Registration() { source_->Forget(id_); }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  friend class TokenSource;
  Registration(TokenSource* source, uint64_t id) : source_(source), id_(id) {}
  TokenSource* const source_;
  const uint64_t id_;
};

}  // namespace coordinator

#endif  // COORDINATOR_RPC_TOKEN_SOURCE_H_
