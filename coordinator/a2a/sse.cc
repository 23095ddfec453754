#include "coordinator/a2a/sse.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace coordinator {

bool SseParser::Feed(absl::string_view bytes, const OnEvent& on_event) {
  if (stopped_) return false;
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c != '\n' && c != '\r') {
      after_cr_ = false;
      continue;
    }
    if (c == '\n' && after_cr_ && i == start && line_.empty()) {
      // The "\n" of a "\r\n" whose "\r" ended the line already.
      after_cr_ = false;
      start = i + 1;
      continue;
    }
    after_cr_ = c == '\r';
    line_.append(bytes.data() + start, i - start);
    start = i + 1;
    std::string line = std::move(line_);
    line_.clear();
    if (!Line(line, on_event)) return false;
  }
  line_.append(bytes.data() + start, bytes.size() - start);
  if (line_.size() + data_.size() > max_event_bytes_) {
    stopped_ = true;
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("an event of the stream is longer than ", max_event_bytes_, " bytes"));
    return false;
  }
  return true;
}

bool SseParser::Finish(const OnEvent& on_event) {
  if (stopped_) return false;
  if (!line_.empty()) {
    std::string line = std::move(line_);
    line_.clear();
    if (!Line(line, on_event)) return false;
  }
  return Dispatch(on_event);
}

bool SseParser::Line(absl::string_view line, const OnEvent& on_event) {
  if (line.empty()) return Dispatch(on_event);
  if (line.front() == ':') return true;  // a comment (keep-alive)
  const size_t colon = line.find(':');
  const absl::string_view field = line.substr(0, colon);
  absl::string_view value;
  if (colon != absl::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field != "data") return true;  // event, id, retry and unknown fields
  if (data_.size() + value.size() + 1 > max_event_bytes_) {
    stopped_ = true;
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("an event of the stream is longer than ", max_event_bytes_, " bytes"));
    return false;
  }
  absl::StrAppend(&data_, value, "\n");
  has_data_ = true;
  return true;
}

bool SseParser::Dispatch(const OnEvent& on_event) {
  if (!has_data_) return true;
  std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  data.pop_back();  // the "\n" after the last line
  if (!on_event(std::move(data))) {
    stopped_ = true;
    return false;
  }
  return true;
}

}  // namespace coordinator
