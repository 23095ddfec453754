// Terminal output of coordctl's progress views: a block of status lines redrawn in place with
// ANSI cursor movement when stdout is a terminal (`watch`, `run watch`), and aligned tables
// (`run status`). Off a terminal the commands print plain lines instead, one per change, so
// scripts and logs see no escape sequences.
#ifndef COORDCTL_PROGRESS_H_
#define COORDCTL_PROGRESS_H_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace coordctl {

// True when `out` is this process's stdout, stdout is a terminal, and TERM is not "dumb".
bool IsInteractive(const std::ostream* out);

// Columns padded to the widest cell plus two spaces; the last column is not padded.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

// A block of lines, one per key in first-seen order plus an optional footer. Each Set or
// SetFooter rewrites the block in place: the cursor goes back up over what was drawn
// (ESC [ n A) and every line is cleared (ESC [ 2 K) and written again.
class LiveLines {
 public:
  explicit LiveLines(std::ostream* out) : out_(out) {}

  void Set(const std::string& key, const std::string& text);
  void SetFooter(const std::string& text);
  // Lines drawn so far (the block's height).
  size_t height() const { return drawn_; }

 private:
  void Redraw();

  std::ostream* out_;
  std::vector<std::pair<std::string, std::string>> lines_;
  std::string footer_;
  size_t drawn_ = 0;
};

}  // namespace coordctl

#endif  // COORDCTL_PROGRESS_H_
