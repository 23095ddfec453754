// The numbers workers of a run are known by in formats that name workers by number
// (MAHABHARATHA's state and logs read a worker id with Python's int()). The coordinator gives
// each worker its number when it joins a run (RunWorker.number); coordctl numbers the workers
// registered before numbers were kept the same way. Header-only: both sides use it.
#ifndef COMMON_WORKER_NUMBERS_H_
#define COMMON_WORKER_NUMBERS_H_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace common {

// The number a worker_id is as a whole number: 0 to 2^31-1, written without a sign or leading
// zeros ("3", not "03" or "+3").
inline std::optional<int64_t> WorkerIdAsNumber(absl::string_view worker_id) {
  int64_t n = 0;
  if (worker_id.empty() || worker_id.size() > 10 || !absl::SimpleAtoi(worker_id, &n) || n < 0 ||
      n > INT32_MAX || absl::StrCat(n) != worker_id) {
    return std::nullopt;
  }
  return n;
}

// The number of a worker that joins a run whose workers have the numbers `taken`: its worker_id
// when that is a number not taken, else one more than the highest taken (0 for the first).
inline int64_t NewWorkerNumber(absl::string_view worker_id,
                               const absl::flat_hash_set<int64_t>& taken) {
  const std::optional<int64_t> own = WorkerIdAsNumber(worker_id);
  if (own.has_value() && !taken.contains(*own)) return *own;
  int64_t highest = -1;
  for (int64_t n : taken) highest = std::max(highest, n);
  return highest + 1;
}

}  // namespace common

#endif  // COMMON_WORKER_NUMBERS_H_
