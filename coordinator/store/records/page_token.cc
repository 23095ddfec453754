#include "coordinator/store/records/page_token.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "coordinator/v1/stored.pb.h"

namespace coordinator {

// Tokens are bounded so a hostile one cannot make the server decode megabytes.
constexpr size_t kMaxTokenBytes = 4096;

std::string EncodePageToken(absl::string_view listing, absl::string_view filter,
                            absl::string_view resume) {
  v1::PageToken token;
  token.set_listing(std::string(listing));
  token.set_filter(std::string(filter));
  token.set_resume(std::string(resume));
  return absl::WebSafeBase64Escape(token.SerializeAsString());
}

absl::StatusOr<std::string> DecodePageToken(absl::string_view token, absl::string_view listing,
                                            absl::string_view filter) {
  if (token.empty()) return std::string();
  std::string raw;
  v1::PageToken parsed;
  if (token.size() > kMaxTokenBytes || !absl::WebSafeBase64Unescape(token, &raw) ||
      !parsed.ParseFromString(raw)) {
    return absl::InvalidArgumentError("page_token is malformed");
  }
  if (parsed.listing() != listing) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token was issued by another listing (", parsed.listing(), ")"));
  }
  if (parsed.filter() != filter) {
    return absl::InvalidArgumentError(
        "page_token was issued for other filters; repeat the first request's filters");
  }
  if (parsed.resume().empty()) return absl::InvalidArgumentError("page_token is malformed");
  return parsed.resume();
}

absl::StatusOr<int> ResolvePageSize(int requested, int default_size, int max) {
  if (requested < 0) return absl::InvalidArgumentError("page_size must not be negative");
  if (requested == 0) return default_size;
  return std::min(requested, max);
}

}  // namespace coordinator
