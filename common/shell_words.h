// Splitting a command line into words as a POSIX shell does, without running a shell: for a
// scenario file's cmd, the green agent's commands and its exec templates.
#ifndef COMMON_SHELL_WORDS_H_
#define COMMON_SHELL_WORDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace common {

// `text` split into words without expanding anything: blanks separate words, 'single quotes'
// keep everything, "double quotes" keep all but \" \\ \$ \`, a backslash outside quotes keeps
// the next character. INVALID_ARGUMENT for an unclosed quote or a backslash at the end. No
// words (an empty or blank text) is not an error.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view text);

}  // namespace common

#endif  // COMMON_SHELL_WORDS_H_
