// libFuzzer harness for the key decoder (storage/key_codec.h). The first byte (and every later
// one, in turn) is a schedule of reads: byte, string or uint64. The rest is the key. Whatever the
// reader accepts must rebuild, with KeyBuilder, into exactly the bytes it consumed; a read that
// fails must fail cleanly (DATA_LOSS) without reading past the end. PrefixUpperBound of the key
// must be greater than every key that starts with it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "storage/key_codec.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "key codec: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t schedule_size = 1 + data[0] % 16;
  if (size < 1 + schedule_size) return 0;
  const absl::string_view schedule(reinterpret_cast<const char*>(data) + 1, schedule_size);
  const absl::string_view key(reinterpret_cast<const char*>(data) + 1 + schedule_size,
                              size - 1 - schedule_size);
  if (key.empty()) return 0;

  // The record type, then the scheduled fields; rebuilt as they are read.
  storage::KeyReader reader(key);
  absl::StatusOr<uint8_t> type = reader.ReadByte();
  if (!type.ok()) Fail("a non-empty key has no first byte");
  storage::KeyBuilder rebuilt(*type);
  for (char op : schedule) {
    const absl::string_view before = reader.rest();
    bool ok = false;
    switch (static_cast<uint8_t>(op) % 3) {
      case 0: {
        absl::StatusOr<uint8_t> b = reader.ReadByte();
        ok = b.ok();
        if (ok) rebuilt.AddByte(*b);
        if (!ok && !absl::IsDataLoss(b.status())) Fail("ReadByte failed without DATA_LOSS");
        break;
      }
      case 1: {
        absl::StatusOr<std::string> s = reader.ReadString();
        ok = s.ok();
        if (ok) rebuilt.AddString(*s);
        if (!ok && !absl::IsDataLoss(s.status())) Fail("ReadString failed without DATA_LOSS");
        break;
      }
      default: {
        absl::StatusOr<uint64_t> v = reader.ReadUint64();
        ok = v.ok();
        if (ok) rebuilt.AddUint64(*v);
        if (!ok && !absl::IsDataLoss(v.status())) Fail("ReadUint64 failed without DATA_LOSS");
        break;
      }
    }
    if (!ok) {
      if (reader.rest() != before) Fail("a failed read consumed input");
      break;
    }
  }
  const absl::string_view consumed = key.substr(0, key.size() - reader.rest().size());
  if (rebuilt.key() != consumed) Fail("decoded fields do not rebuild the bytes they came from");

  const std::string upper = storage::PrefixUpperBound(key);
  if (!upper.empty()) {
    if (!(absl::string_view(upper) > key)) Fail("upper bound not above the prefix");
    if (absl::StartsWith(upper, key)) Fail("upper bound starts with the prefix");
  } else if (key.find_first_not_of('\xff') != absl::string_view::npos) {
    Fail("no upper bound for a prefix that has one");
  }
  return 0;
}
