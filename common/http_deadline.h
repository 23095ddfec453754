// A deadline on a whole HTTP call made with cpp-httplib. httplib's own timeouts bound each
// connect, read and write, not the call: a peer that trickles a byte just inside the read timeout
// could hold a call forever. CallWithDeadline runs the call and, if it is still running when the
// deadline passes, stops the client (httplib's thread-safe way to make a blocked read fail).
// Header-only and templated so that common/ does not depend on httplib.
#ifndef COMMON_HTTP_DEADLINE_H_
#define COMMON_HTTP_DEADLINE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace common {

// Sets `client`'s connect, read and write timeouts to `timeout` (at least 1 ms: httplib reads a
// zero timeout as "do not wait").
template <typename Client>
void SetHttpTimeouts(Client& client, absl::Duration timeout) {
  const auto micros =
      std::chrono::microseconds(std::max<int64_t>(1000, absl::ToInt64Microseconds(timeout)));
  client.set_connection_timeout(micros);
  client.set_read_timeout(micros);
  client.set_write_timeout(micros);
}

// Runs `call()` (which uses `client`) with every httplib timeout set to `timeout`, and stops
// `client` if the call is still running after `timeout`. `*expired` tells whether the deadline
// passed before the call returned, so a caller can report DEADLINE_EXCEEDED.
template <typename Client, typename Call>
auto CallWithDeadline(Client& client, absl::Duration timeout, Call call, bool* expired) {
  SetHttpTimeouts(client, timeout);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Mutex mu;
  bool done = false;
  std::thread watchdog([&] {
    absl::MutexLock lock(&mu);
    if (!mu.AwaitWithDeadline(absl::Condition(&done), deadline)) client.stop();
  });
  auto result = call();
  {
    absl::MutexLock lock(&mu);
    done = true;
  }
  watchdog.join();
  *expired = absl::Now() >= deadline;
  return result;
}

}  // namespace common

#endif  // COMMON_HTTP_DEADLINE_H_
