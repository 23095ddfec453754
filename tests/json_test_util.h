// Comparing JSON texts as JSON, for the tests of the state files we import and export
// (coordctl/arial_state_test.cc, coordctl/mahabharatha_state_test.cc,
// tests/run_io_process_test.cc): key order, layout and the spelling of numbers aside, as the
// tools' own readers (JSON.parse, json.load) see them. Header only.
#ifndef TESTS_JSON_TEST_UTIL_H_
#define TESTS_JSON_TEST_UTIL_H_

#include <fstream>
#include <iterator>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace testing_util {

// `text` parsed as one JSON object (a failed expectation when it is not one).
inline google::protobuf::Struct JsonObject(const std::string& text) {
  google::protobuf::Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &s).ok()) << text;
  return s;
}

// Whether `a` and `b` are the same JSON object (for polling; ExpectSameJson says how they differ).
inline bool SameJson(const std::string& a, const std::string& b) {
  return google::protobuf::util::MessageDifferencer::Equals(JsonObject(a), JsonObject(b));
}

// Expects `a` and `b` to be the same JSON object; prints the differences and both texts.
inline void ExpectSameJson(const std::string& a, const std::string& b) {
  google::protobuf::util::MessageDifferencer differ;
  std::string diff;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(JsonObject(a), JsonObject(b))) << diff << "\n" << a << "\nvs\n" << b;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace testing_util

#endif  // TESTS_JSON_TEST_UTIL_H_
