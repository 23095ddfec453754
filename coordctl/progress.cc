#include "coordctl/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace coordctl {

bool IsInteractive(const std::ostream* out) {
  if (out != &std::cout || isatty(STDOUT_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

void LiveLines::Set(const std::string& key, const std::string& text) {
  auto it = std::find_if(lines_.begin(), lines_.end(),
                         [&](const auto& line) { return line.first == key; });
  if (it == lines_.end()) {
    lines_.emplace_back(key, text);
  } else {
    it->second = text;
  }
  Redraw();
}

void LiveLines::SetFooter(const std::string& text) {
  footer_ = text;
  Redraw();
}

void LiveLines::Redraw() {
  std::string frame;
  if (drawn_ > 0) frame += "\x1b[" + std::to_string(drawn_) + "A";
  size_t n = 0;
  for (const auto& line : lines_) {
    frame += "\r\x1b[2K" + line.second + "\n";
    ++n;
  }
  if (!footer_.empty()) {
    frame += "\r\x1b[2K" + footer_ + "\n";
    ++n;
  }
  *out_ << frame << std::flush;
  drawn_ = n;
}

}  // namespace coordctl
