// When two error texts count as "the same error" for the loop breaker. Pure functions, no
// state. Two errors match when any of these rules holds, tried in this order:
//
//   1. exact:    the texts are byte-for-byte equal.
//   2. prefix:   both are at least 50 characters (UTF-8 code points) long and their first 50
//                characters are equal (the tail often carries a line number or an address).
//   3. contains: both are non-empty and one contains the other (a wrapper added context).
//   4. type:     both have the same error type followed by ':' at the start of their first
//                line that has one, such as "TypeError:" or
//                "java.lang.IllegalStateException:" (so a traceback's last line counts). A type
//                is a run of letters, digits, '_' and '.' that ends in "Error" or "Exception"
//                and has something before that suffix, or a bare "Error" followed by ": ", as
//                the ARIA breaker script took it (its rule was ^[A-Za-z]*Error: per line).
//                "Exception:" and "pkg.Error:" stay too generic.
//   5. similar:  similarity >= 0.80, where
//                  similarity(a, b) = 1 - levenshtein(a', b') / max(|a'|, |b'|)
//                over a' and b', the first 256 bytes of each text, and levenshtein counts the
//                byte insertions, deletions and substitutions that turn a' into b'. Two empty
//                texts have similarity 1. Bounding the compared bytes bounds the cost of one
//                comparison (at most 256 x 256 steps; texts that differ in length by more than
//                20% are rejected without any).
#ifndef COORDINATOR_STORE_RETRY_ERROR_SIMILARITY_H_
#define COORDINATOR_STORE_RETRY_ERROR_SIMILARITY_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace coordinator {

// How many leading characters rule 2 compares.
inline constexpr size_t kErrorPrefixChars = 50;
// How many leading bytes of each text rule 5 compares.
inline constexpr size_t kSimilarityWindowBytes = 256;
// Rule 5's threshold, in percent.
inline constexpr int kSimilarityThresholdPercent = 80;

// Which rule made two errors match (kNone: they do not).
enum class ErrorMatch { kNone, kExact, kPrefix, kContains, kType, kSimilar };

// The first rule that holds for `a` and `b`, or kNone.
ErrorMatch MatchErrors(absl::string_view a, absl::string_view b);

// True when MatchErrors(a, b) is not kNone. Symmetric.
inline bool ErrorsMatch(absl::string_view a, absl::string_view b) {
  return MatchErrors(a, b) != ErrorMatch::kNone;
}

// The error type at the start of the first line of `error` that starts with one, without the
// ':' (for example "TypeError", or "Error" for "Error: ..."), or "" when none does (rule 4).
absl::string_view ErrorType(absl::string_view error);

// Levenshtein distance between `a` and `b`, in bytes. O(|a| * |b|) time, O(|b|) space: call it
// on bounded inputs.
size_t LevenshteinDistance(absl::string_view a, absl::string_view b);

// Rule 5's similarity of `a` and `b`, from 0 to 1.
double ErrorSimilarity(absl::string_view a, absl::string_view b);

// A short name of the rule, for logs and tests ("exact", "prefix", ..., "none").
const char* ErrorMatchName(ErrorMatch match);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RETRY_ERROR_SIMILARITY_H_
