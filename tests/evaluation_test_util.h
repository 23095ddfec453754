// What the evaluation process tests share: the sample task they run and its perfect score.
#ifndef TESTS_EVALUATION_TEST_UTIL_H_
#define TESTS_EVALUATION_TEST_UTIL_H_

#include <string>

namespace testing_util {

// The sample task bundle (examples/tasks/heap-overflow-record) the evaluations run.
inline constexpr char kTask[] = "heap-overflow-record";
// The undisturbed run's score: the scripted policy finds the bug exactly.
inline constexpr char kPerfectScore[] =
    "{\"task_id\":\"heap-overflow-record\",\"file_accuracy\":1.0000,\"function_accuracy\":1.0000,"
    "\"line_accuracy\":1.0000,\"score\":1.0000}";

// The sample task bundles of examples/tasks (the binary defines COORD_SOURCE_DIR).
inline std::string TasksDir() { return std::string(COORD_SOURCE_DIR) + "/examples/tasks"; }

}  // namespace testing_util

#endif  // TESTS_EVALUATION_TEST_UTIL_H_
