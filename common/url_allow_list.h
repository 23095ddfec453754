// Outbound URL checks: the hosts the coordinator (webhooks) and the purple agent (model
// endpoints) may call. A URL is parsed strictly (http or https, a host, an optional port; no
// userinfo, no percent-encoded or otherwise odd host) and its host and port are compared with an
// operator's allow-list, so a stored or configured URL cannot make a process call an arbitrary
// host. Names are compared, not the addresses they resolve to (see docs/security.md).
#ifndef COMMON_URL_ALLOW_LIST_H_
#define COMMON_URL_ALLOW_LIST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace common {

// The parts of an http(s) URL that decide where a call goes.
struct HttpUrl {
  // "http" or "https", lowercase.
  std::string scheme;
  // Lowercase, without a trailing dot; an IPv6 literal without its brackets.
  std::string host;
  // The explicit port, else 80 (http) or 443 (https).
  int port = 0;
  // Everything from the first '/', '?' or '#' after the authority ("" when there is none).
  std::string path;

  // "host:port", with brackets around an IPv6 host.
  std::string HostPort() const;
};

// Parses `url`. INVALID_ARGUMENT for another scheme, an empty or malformed host, userinfo
// ("user@host", which hides the real host from a careless reader), a bad port, or whitespace,
// control characters, backslashes or '%' in the authority.
[[nodiscard]] absl::StatusOr<HttpUrl> ParseHttpUrl(absl::string_view url);

// True for 127.0.0.0/8, ::1 and the name localhost.
bool IsLoopbackHost(absl::string_view host);

// A set of allowed hosts, each with any port or one port.
class HostAllowList {
 public:
  // Parses a comma-separated list of `host`, `host:port`, `[v6]` or `[v6]:port` entries (case
  // and a trailing dot do not matter). "" allows loopback hosts only (127.0.0.0/8, ::1,
  // localhost: any port); "*" allows every host. INVALID_ARGUMENT for a malformed entry.
  [[nodiscard]] static absl::StatusOr<HostAllowList> Parse(absl::string_view spec);

  // Loopback only (the default).
  HostAllowList() = default;

  bool Allows(const HttpUrl& url) const;

  // OK when `url` parses and its host is allowed; otherwise INVALID_ARGUMENT (does not parse)
  // or PERMISSION_DENIED naming the host and `flag` ("... is not in --<flag> (...)").
  [[nodiscard]] absl::Status Check(absl::string_view url, absl::string_view flag) const;

  // The list as an operator would write it, "loopback only" for the default.
  std::string ToString() const;

 private:
  struct Entry {
    std::string host;
    int port = 0;  // 0: any port
  };
  bool allow_all_ = false;
  std::vector<Entry> entries_;  // empty: loopback only
};

}  // namespace common

#endif  // COMMON_URL_ALLOW_LIST_H_
