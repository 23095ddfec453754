// Server-Sent Events (the text/event-stream format of the HTML standard) read incrementally, as
// the JSON-RPC and HTTP+JSON bindings stream: bytes go in as they arrive, in pieces of any size,
// and each event's data (its "data:" lines joined by "\n") comes out once its blank line is read.
// Event names, ids, retry hints and comments are ignored: A2A streams carry everything in data.
#ifndef COORDINATOR_A2A_SSE_H_
#define COORDINATOR_A2A_SSE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace coordinator {

class SseParser {
 public:
  // Called with each event's data; returning false stops the parser (Feed returns false).
  using OnEvent = std::function<bool(std::string data)>;

  // An event (or a line) longer than `max_event_bytes` stops the parser with an error.
  explicit SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  // Reads `bytes`, the next piece of the stream (lines end in "\n", "\r\n" or "\r", and may be
  // split across pieces). False when `on_event` returned false or an event was too long (then
  // status() says so); the parser takes nothing more after that.
  bool Feed(absl::string_view bytes, const OnEvent& on_event);
  // The stream ended: an event whose blank line never came is dispatched all the same (a lenient
  // reading; the standard drops it). False as for Feed.
  bool Finish(const OnEvent& on_event);

  // OK, or why the parser stopped by itself (RESOURCE_EXHAUSTED for an event that is too long).
  const absl::Status& status() const { return status_; }

 private:
  bool Line(absl::string_view line, const OnEvent& on_event);
  bool Dispatch(const OnEvent& on_event);

  const size_t max_event_bytes_;
  std::string line_;  // the line read so far
  std::string data_;  // the data of the event read so far, each line followed by "\n"
  bool has_data_ = false;
  bool after_cr_ = false;  // the last piece ended in "\r": a "\n" next belongs to it
  bool stopped_ = false;
  absl::Status status_;
};

}  // namespace coordinator

#endif  // COORDINATOR_A2A_SSE_H_
