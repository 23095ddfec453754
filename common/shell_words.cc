#include "common/shell_words.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace common {

absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view cmd) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < cmd.size(); ++i) {
    const char c = cmd[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = cmd.find('\'', i + 1);
      if (end == absl::string_view::npos)
        return absl::InvalidArgumentError("unterminated single quote");
      absl::StrAppend(&word, cmd.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= cmd.size()) return absl::InvalidArgumentError("unterminated double quote");
        if (cmd[i] == '"') break;
        if (cmd[i] == '\\' && i + 1 < cmd.size() &&
            absl::string_view("\"\\$`").find(cmd[i + 1]) != absl::string_view::npos) {
          ++i;
        }
        word.push_back(cmd[i]);
      }
    } else if (c == '\\') {
      if (i + 1 >= cmd.size()) return absl::InvalidArgumentError("a backslash ends the command");
      word.push_back(cmd[++i]);
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace common
