#include "coordinator/store/retry/error_similarity.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace coordinator {
namespace {

// Byte length of the first `chars` UTF-8 code points of `s`, or npos when `s` has fewer.
// Counts lead bytes, so malformed UTF-8 still yields a bounded, deterministic answer.
size_t PrefixBytes(absl::string_view s, size_t chars) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    if (seen == chars) return i;
    ++seen;
  }
  return seen == chars ? s.size() : absl::string_view::npos;
}

bool IsTypeChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.'; }

// Rule 5 without computing the full distance: true when levenshtein(a, b) <= 20% of the
// longer length. Gives up on a row as soon as every cell of it exceeds the budget.
bool SimilarEnough(absl::string_view a, absl::string_view b) {
  const size_t longest = std::max(a.size(), b.size());
  if (longest == 0) return true;
  // dist * 100 <= (100 - threshold) * longest
  const size_t budget = longest * (100 - kSimilarityThresholdPercent) / 100;
  const size_t diff = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (diff > budget) return false;  // the distance is at least the length difference
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t row_min = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > budget) return false;
    prev.swap(cur);
  }
  return prev[b.size()] <= budget;
}

}  // namespace

size_t LevenshteinDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    prev.swap(cur);
  }
  return prev[b.size()];
}

double ErrorSimilarity(absl::string_view a, absl::string_view b) {
  a = a.substr(0, kSimilarityWindowBytes);
  b = b.substr(0, kSimilarityWindowBytes);
  const size_t longest = std::max(a.size(), b.size());
  if (longest == 0) return 1.0;
  return 1.0 - static_cast<double>(LevenshteinDistance(a, b)) / static_cast<double>(longest);
}

namespace {

// The error type `line` starts with (see ErrorType), or "".
absl::string_view LineErrorType(absl::string_view line) {
  size_t end = 0;
  while (end < line.size() && IsTypeChar(line[end])) ++end;
  if (end == line.size() || line[end] != ':') return "";
  const absl::string_view type = line.substr(0, end);
  if (type == "Error") {
    // The script's bare "Error: " (with the space).
    return end + 1 < line.size() && line[end + 1] == ' ' ? type : "";
  }
  for (absl::string_view suffix : {absl::string_view("Error"), absl::string_view("Exception")}) {
    if (type.size() > suffix.size() && absl::EndsWith(type, suffix)) {
      // "Error" after a separator only ("pkg.Error:") is as generic as a bare "Error:".
      const char before = type[type.size() - suffix.size() - 1];
      if (before != '.') return type;
    }
  }
  return "";
}

}  // namespace

absl::string_view ErrorType(absl::string_view error) {
  while (true) {
    const size_t newline = error.find('\n');
    const absl::string_view type = LineErrorType(error.substr(0, newline));
    if (!type.empty() || newline == absl::string_view::npos) return type;
    error.remove_prefix(newline + 1);
  }
}

ErrorMatch MatchErrors(absl::string_view a, absl::string_view b) {
  if (a == b) return ErrorMatch::kExact;
  const size_t prefix_a = PrefixBytes(a, kErrorPrefixChars);
  const size_t prefix_b = PrefixBytes(b, kErrorPrefixChars);
  if (prefix_a != absl::string_view::npos && prefix_b != absl::string_view::npos &&
      a.substr(0, prefix_a) == b.substr(0, prefix_b)) {
    return ErrorMatch::kPrefix;
  }
  if (!a.empty() && !b.empty() && (absl::StrContains(a, b) || absl::StrContains(b, a))) {
    return ErrorMatch::kContains;
  }
  const absl::string_view type_a = ErrorType(a);
  if (!type_a.empty() && type_a == ErrorType(b)) return ErrorMatch::kType;
  if (SimilarEnough(a.substr(0, kSimilarityWindowBytes), b.substr(0, kSimilarityWindowBytes))) {
    return ErrorMatch::kSimilar;
  }
  return ErrorMatch::kNone;
}

const char* ErrorMatchName(ErrorMatch match) {
  switch (match) {
    case ErrorMatch::kNone:
      return "none";
    case ErrorMatch::kExact:
      return "exact";
    case ErrorMatch::kPrefix:
      return "prefix";
    case ErrorMatch::kContains:
      return "contains";
    case ErrorMatch::kType:
      return "type";
    case ErrorMatch::kSimilar:
      return "similar";
  }
  return "none";
}

}  // namespace coordinator
