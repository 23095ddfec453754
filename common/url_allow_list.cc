#include "common/url_allow_list.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace common {
namespace {

bool IsIpv6(const std::string& host) {
  in6_addr addr;
  return inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

// Parses "host", "host:port", "[v6]" or "[v6]:port" into a normalized host and a port (0 when
// absent). The host is lowercased and loses one trailing dot; a name may hold only letters,
// digits, '-', '_' and '.'.
absl::Status ParseAuthority(absl::string_view authority, std::string* host, int* port) {
  *port = 0;
  absl::string_view port_text;
  bool has_port = false;
  if (absl::ConsumePrefix(&authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError("an IPv6 host lacks its closing ']'");
    }
    *host = absl::AsciiStrToLower(authority.substr(0, close));
    if (!IsIpv6(*host)) {
      return absl::InvalidArgumentError(absl::StrCat("[", *host, "] is not an IPv6 address"));
    }
    absl::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) {
        return absl::InvalidArgumentError("only a :port may follow an IPv6 host");
      }
      port_text = rest;
      has_port = true;
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != absl::string_view::npos) {
      if (authority.find(':', colon + 1) != absl::string_view::npos) {
        return absl::InvalidArgumentError("an IPv6 host must be written in brackets: [v6]:port");
      }
      port_text = authority.substr(colon + 1);
      has_port = true;
      authority = authority.substr(0, colon);
    }
    *host = absl::AsciiStrToLower(authority);
    if (absl::EndsWith(*host, ".")) host->pop_back();
    if (host->empty()) return absl::InvalidArgumentError("the host is empty");
    for (char c : *host) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
        return absl::InvalidArgumentError(
            absl::StrCat("the host \"", *host, "\" holds a character that is not allowed"));
      }
    }
    if (absl::StartsWith(*host, ".") || absl::StrContains(*host, "..")) {
      return absl::InvalidArgumentError(absl::StrCat("the host \"", *host, "\" is malformed"));
    }
  }
  if (has_port) {
    int value = 0;
    if (port_text.empty() || port_text.size() > 5 ||
        !std::all_of(port_text.begin(), port_text.end(),
                     [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
        !absl::SimpleAtoi(port_text, &value) || value < 1 || value > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("the port \"", port_text, "\" is not a number from 1 to 65535"));
    }
    *port = value;
  }
  return absl::OkStatus();
}

std::string HostPortText(const std::string& host, int port) {
  const std::string h = absl::StrContains(host, ':') ? absl::StrCat("[", host, "]") : host;
  return port == 0 ? h : absl::StrCat(h, ":", port);
}

}  // namespace

std::string HttpUrl::HostPort() const { return HostPortText(host, port); }

absl::StatusOr<HttpUrl> ParseHttpUrl(absl::string_view url) {
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("URL \"", url.substr(0, 200), "\": ", why));
  };
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return invalid("holds whitespace or a control character");
  }
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) return invalid("is not an http:// or https:// URL");
  HttpUrl out;
  out.scheme = absl::AsciiStrToLower(url.substr(0, scheme_end));
  if (out.scheme != "http" && out.scheme != "https") {
    return invalid("is not an http:// or https:// URL");
  }
  absl::string_view rest = url.substr(scheme_end + 3);
  const size_t authority_end = rest.find_first_of("/?#");
  const absl::string_view authority = rest.substr(0, authority_end);
  if (authority_end != absl::string_view::npos) out.path = std::string(rest.substr(authority_end));
  if (absl::StrContains(authority, '@')) {
    return invalid("holds userinfo (user@host); put credentials in the config, not the URL");
  }
  if (absl::StrContains(authority, '\\') || absl::StrContains(authority, '%')) {
    return invalid("holds '\\' or '%' in its host");
  }
  if (absl::Status s = ParseAuthority(authority, &out.host, &out.port); !s.ok()) {
    return invalid(s.message());
  }
  if (out.port == 0) out.port = out.scheme == "https" ? 443 : 80;
  return out;
}

bool IsLoopbackHost(absl::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (std::memcmp(&v6, &in6addr_loopback, sizeof(v6)) == 0) return true;
    // ::ffff:127.x.x.x, the IPv4 loopback written as IPv6.
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(v6.s6_addr, kMapped, sizeof(kMapped)) == 0 && v6.s6_addr[12] == 127;
  }
  return false;
}

absl::StatusOr<HostAllowList> HostAllowList::Parse(absl::string_view spec) {
  HostAllowList list;
  for (absl::string_view raw : absl::StrSplit(spec, ',')) {
    const absl::string_view entry = absl::StripAsciiWhitespace(raw);
    if (entry.empty()) continue;
    if (entry == "*") {
      list.allow_all_ = true;
      continue;
    }
    if (absl::StrContains(entry, "://") || absl::StrContains(entry, '/') ||
        absl::StrContains(entry, '@')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "allow-list entry \"", entry, "\" is not host, host:port, [v6] or [v6]:port"));
    }
    Entry parsed;
    if (absl::Status s = ParseAuthority(entry, &parsed.host, &parsed.port); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("allow-list entry \"", entry, "\": ", s.message()));
    }
    list.entries_.push_back(std::move(parsed));
  }
  return list;
}

bool HostAllowList::Allows(const HttpUrl& url) const {
  if (allow_all_) return true;
  if (entries_.empty()) return IsLoopbackHost(url.host);
  for (const Entry& entry : entries_) {
    if (entry.host == url.host && (entry.port == 0 || entry.port == url.port)) return true;
  }
  return false;
}

absl::Status HostAllowList::Check(absl::string_view url, absl::string_view flag) const {
  absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) return parsed.status();
  if (Allows(*parsed)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("host ", parsed->HostPort(), " is not in --", flag, " (", ToString(), ")"));
}

std::string HostAllowList::ToString() const {
  if (allow_all_) return "every host";
  if (entries_.empty()) return "loopback only: 127.0.0.0/8, ::1, localhost";
  return absl::StrJoin(entries_, ",", [](std::string* out, const Entry& entry) {
    absl::StrAppend(out, HostPortText(entry.host, entry.port));
  });
}

}  // namespace common
