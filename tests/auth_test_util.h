// What the authentication process tests share: principals, their bearer tokens, the token file.
#ifndef TESTS_AUTH_TEST_UTIL_H_
#define TESTS_AUTH_TEST_UTIL_H_

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace testing_util {

inline constexpr char kAdmin[] = "admin-0f3b9c2e7d41a8b5c6d7e8f9";
inline constexpr char kGreen[] = "green-5a1c7e9b3d2f4a6c8e0b1d3f";
inline constexpr char kPurple[] = "purple-9e8d7c6b5a4f3e2d1c0b9a8";
inline constexpr char kReader[] = "reader-1b2c3d4e5f6a7b8c9d0e1f2";
inline constexpr char kExpired[] = "expired-7f6e5d4c3b2a1f0e9d8c7b";

// A token file naming them: ops (admin), green and purple (agents), dash (reader), and an
// expired token of green's.
inline std::string TokenFileJson() {
  return absl::StrCat(
      R"({"tokens": [)",                                                        //
      R"({"token": ")", kAdmin, R"(", "principal": "ops", "role": "admin"},)",  //
      R"({"token": ")", kGreen, R"(", "principal": "green", "role": "agent"},)", R"({"token": ")",
      kPurple, R"(", "principal": "purple", "role": "agent"},)", R"({"token": ")", kReader,
      R"(", "principal": "dash", "role": "reader"},)", R"({"token": ")", kExpired,
      R"(", "principal": "green", "role": "agent", "expiresAt": )", R"("2021-06-01T00:00:00Z"}]})");
}

// Writes `text` to `path`, readable by its owner only (as a token file must be).
inline void WritePrivateFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0600);
}

}  // namespace testing_util

#endif  // TESTS_AUTH_TEST_UTIL_H_
