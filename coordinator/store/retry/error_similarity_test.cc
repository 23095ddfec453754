#include "coordinator/store/retry/error_similarity.h"

#include <string>

#include "gtest/gtest.h"

namespace coordinator {
namespace {

// Checks both argument orders: every rule is symmetric.
void ExpectMatch(const std::string& a, const std::string& b, ErrorMatch expected) {
  EXPECT_EQ(MatchErrors(a, b), expected)
      << "\"" << a << "\" vs \"" << b << "\": got " << ErrorMatchName(MatchErrors(a, b));
  EXPECT_EQ(MatchErrors(b, a), expected)
      << "\"" << b << "\" vs \"" << a << "\": got " << ErrorMatchName(MatchErrors(b, a));
  EXPECT_EQ(ErrorsMatch(a, b), expected != ErrorMatch::kNone);
}

TEST(ErrorSimilarityTest, ExactMatch) {
  ExpectMatch("Timeout after 30s", "Timeout after 30s", ErrorMatch::kExact);
  ExpectMatch("", "", ErrorMatch::kExact);
}

TEST(ErrorSimilarityTest, SameFirstFiftyCharacters) {
  const std::string head = "Build failed while compiling module payments/servi";  // 50
  ASSERT_EQ(head.size(), 50u);
  ExpectMatch(head + "ce.cc at line 120 column 7", head + "ce_test.cc: linker ran out of memory",
              ErrorMatch::kPrefix);
  // Exactly 50 characters on both sides, equal: exact, not prefix.
  ExpectMatch(head, head, ErrorMatch::kExact);
}

TEST(ErrorSimilarityTest, PrefixCountsCharactersNotBytes) {
  // 50 two-byte characters are 100 bytes; the prefix rule looks at characters.
  std::string head;
  for (int i = 0; i < 50; ++i) head += "\xc3\xa9";  // é
  ExpectMatch(head + " first tail that is long enough to differ a lot",
              head + " a completely different ending, nothing alike", ErrorMatch::kPrefix);
}

TEST(ErrorSimilarityTest, PrefixNeedsFiftyCharactersOnBothSides) {
  const std::string head = "Build failed while compiling module payments/servi";
  // One side has only 49 characters: the prefix rule does not apply, and the texts are not
  // otherwise alike (the 49 are contained in the other, though: contains).
  ExpectMatch(head.substr(0, 49), head + "ce.cc", ErrorMatch::kContains);
  // 40 equal characters, then 30 different ones: no rule matches.
  const std::string forty(40, 'x');
  ExpectMatch(forty + std::string(30, 'a'), forty + std::string(30, 'b'), ErrorMatch::kNone);
}

TEST(ErrorSimilarityTest, OneContainsTheOther) {
  ExpectMatch("Rate limit exceeded", "HTTP 429: Rate limit exceeded, retry in 20s",
              ErrorMatch::kContains);
  // An empty error contains nothing and is contained by nothing.
  ExpectMatch("", "Rate limit exceeded", ErrorMatch::kNone);
}

TEST(ErrorSimilarityTest, SameErrorType) {
  ExpectMatch("TypeError: Cannot read property 'map' of undefined",
              "TypeError: x.forEach is not a function", ErrorMatch::kType);
  ExpectMatch("java.lang.NullPointerException: user is null",
              "java.lang.NullPointerException: cart.items", ErrorMatch::kType);
  ExpectMatch("ModuleNotFoundError: No module named 'yaml'",
              "ModuleNotFoundError: No module named 'requests'", ErrorMatch::kType);
}

TEST(ErrorSimilarityTest, DifferentOrGenericErrorTypesDoNotMatch) {
  ExpectMatch("TypeError: a", "ValueError: a", ErrorMatch::kNone);
  // A bare "Exception:" says nothing about the kind of error.
  ExpectMatch("Exception: disk full", "Exception: permission denied", ErrorMatch::kNone);
  ExpectMatch("Error:file not found", "Error:connection refused", ErrorMatch::kNone);
}

// The ARIA breaker script's type rule (^[A-Za-z]*Error: on any line) is kept as a superset.
TEST(ErrorSimilarityTest, BareErrorPrefixAndLaterLinesMatchAsTheScriptDid) {
  ExpectMatch("Error: file not found", "Error: connection refused", ErrorMatch::kType);
  ExpectMatch("Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'id'",
              "Traceback (most recent call last):\n  File \"b.py\", line 90\nKeyError: 'x'",
              ErrorMatch::kType);
}

TEST(ErrorSimilarityTest, ErrorTypeExtraction) {
  EXPECT_EQ(ErrorType("TypeError: x"), "TypeError");
  EXPECT_EQ(ErrorType("My_CustomError: x"), "My_CustomError");
  EXPECT_EQ(ErrorType("java.lang.IllegalStateException: x"), "java.lang.IllegalStateException");
  EXPECT_EQ(ErrorType("Error: x"), "Error");
  EXPECT_EQ(ErrorType("Error:x"), "");
  EXPECT_EQ(ErrorType("Error:"), "");
  EXPECT_EQ(ErrorType("make failed\nValueError: bad\nTypeError: later"), "ValueError");
  EXPECT_EQ(ErrorType("first\n\n"), "");
  EXPECT_EQ(ErrorType("Exception: x"), "");
  EXPECT_EQ(ErrorType("pkg.Error: x"), "");
  EXPECT_EQ(ErrorType("TypeError x"), "");    // no colon
  EXPECT_EQ(ErrorType(" TypeError: x"), "");  // must start the text
  EXPECT_EQ(ErrorType("Timeout: x"), "");     // not an error type name
  EXPECT_EQ(ErrorType(""), "");
}

TEST(ErrorSimilarityTest, SimilarAtEightyPercent) {
  // One byte apart in 31: similarity 0.97.
  ExpectMatch("Connection refused on port 5432", "Connection refused on port 5433",
              ErrorMatch::kSimilar);
  // The threshold itself: 2 edits in 10 bytes is 0.80 (match), 3 is 0.70 (no match).
  ExpectMatch("abcdefghij", "abcdefghXY", ErrorMatch::kSimilar);
  ExpectMatch("abcdefghij", "abcdefgXYZ", ErrorMatch::kNone);
  // A length difference alone can rule a match out: 10 vs 13 bytes needs 3 edits > 2.6.
  ExpectMatch("abcdefghij", "abcdefghijklm", ErrorMatch::kContains);
  ExpectMatch("abcdefghij", "Xbcdefghijklm", ErrorMatch::kNone);
}

TEST(ErrorSimilarityTest, UnrelatedErrorsDoNotMatch) {
  ExpectMatch("Timeout after 30s", "Rate limit exceeded", ErrorMatch::kNone);
  ExpectMatch("a", "b", ErrorMatch::kNone);
  ExpectMatch("Segmentation fault (core dumped)", "Permission denied (publickey)",
              ErrorMatch::kNone);
}

TEST(ErrorSimilarityTest, LevenshteinDistance) {
  EXPECT_EQ(LevenshteinDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(LevenshteinDistance("flaw", "lawn"), 2u);
  EXPECT_EQ(LevenshteinDistance("", "abc"), 3u);
  EXPECT_EQ(LevenshteinDistance("abc", ""), 3u);
  EXPECT_EQ(LevenshteinDistance("same", "same"), 0u);
}

TEST(ErrorSimilarityTest, SimilarityValue) {
  EXPECT_DOUBLE_EQ(ErrorSimilarity("", ""), 1.0);
  EXPECT_DOUBLE_EQ(ErrorSimilarity("abcdefghij", "abcdefghXY"), 0.8);
  EXPECT_DOUBLE_EQ(ErrorSimilarity("abc", "xyz"), 0.0);
  // Only the first 256 bytes are compared.
  const std::string base(kSimilarityWindowBytes, 'q');
  EXPECT_DOUBLE_EQ(ErrorSimilarity(base + "tail one", base + "completely other tail"), 1.0);
}

TEST(ErrorSimilarityTest, LongTextsAreBoundedAndStillCompared) {
  // Texts far longer than the window: the cost stays bounded, and two 16 KiB errors that
  // share a first kilobyte match by prefix.
  const std::string shared(1024, 'z');
  EXPECT_EQ(MatchErrors(shared + std::string(16 << 10, 'a'), shared + std::string(16 << 10, 'b')),
            ErrorMatch::kPrefix);
  // Long texts with nothing in common do not match.
  std::string a, b;
  for (int i = 0; i < (16 << 10); ++i) {
    a.push_back(static_cast<char>('a' + i % 7));
    b.push_back(static_cast<char>('k' + i % 11));
  }
  EXPECT_EQ(MatchErrors(a, b), ErrorMatch::kNone);
}

}  // namespace
}  // namespace coordinator
