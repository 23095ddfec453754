// Opaque page tokens: base64 (URL alphabet) of a PageToken message naming the listing and a
// fingerprint of the filters, so a token replayed against another listing or other filters is
// refused with INVALID_ARGUMENT instead of silently returning the wrong page.
#ifndef COORDINATOR_STORE_RECORDS_PAGE_TOKEN_H_
#define COORDINATOR_STORE_RECORDS_PAGE_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coordinator {

std::string EncodePageToken(absl::string_view listing, absl::string_view filter,
                            absl::string_view resume);

// Returns the resume position of `token`, or INVALID_ARGUMENT when the token is malformed or
// was issued for another listing or other filters. An empty token is "from the start" ("").
[[nodiscard]] absl::StatusOr<std::string> DecodePageToken(absl::string_view token,
                                                          absl::string_view listing,
                                                          absl::string_view filter);

// Most bytes of records one page carries (3 MiB). A page ends early, with a next_page_token,
// before the next record would take it past this, so that every page fits a client's default
// 4 MiB receive limit whatever the page_size. A page always holds at least one record; Limits
// keeps every record well below this.
inline constexpr size_t kMaxPageBytes = 3 << 20;

// Page size to use: `requested` when in 1..max, `default_size` when 0; INVALID_ARGUMENT when
// negative. Larger requests are capped at `max`.
[[nodiscard]] absl::StatusOr<int> ResolvePageSize(int requested, int default_size, int max);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_PAGE_TOKEN_H_
