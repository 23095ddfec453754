// bench_fsync_probe: the disk's own durable-append latency, measured the way a write-ahead log
// pays it: append a small record to a file in --dir and fdatasync it, --count times. Two ways:
//   preallocated  into space reserved with fallocate(KEEP_SIZE), as RocksDB does for its WAL:
//                 the file system has no blocks to allocate at each sync
//   growing       appends that allocate as they go, as Redis's appendonly file does
// Prints one line of JSON per way with p50, p99 and the mean.
//
//   bench_fsync_probe --dir=DATA_DIR_PARENT [--count=500] [--bytes=200]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

ABSL_FLAG(std::string, dir, ".", "a directory on the file system to measure");
ABSL_FLAG(int, count, 500, "appends to time");
ABSL_FLAG(int, bytes, 200, "bytes per append");

namespace {

// Times `count` appends of `bytes` + fdatasync to a new file in `dir` (after 10 untimed ones);
// prints a JSON line named `way`. False on an I/O error.
bool Probe(const std::string& dir, const char* way, bool preallocate, int count, int bytes) {
  const std::string path = absl::StrCat(dir, "/fsync_probe.", getpid());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) {
    std::cerr << "bench_fsync_probe: cannot create " << path << ": " << std::strerror(errno)
              << "\n";
    return false;
  }
  const std::string record(static_cast<size_t>(bytes), 'x');
  bool failed = false;
  if (preallocate &&
      fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(count + 10) * bytes + 4096) != 0) {
    std::cerr << "bench_fsync_probe: fallocate: " << std::strerror(errno) << "\n";
    failed = true;
  }
  if (!failed && preallocate && fsync(fd) != 0) failed = true;
  std::vector<double> us;
  for (int i = 0; i < count + 10 && !failed; ++i) {
    const absl::Time begin = absl::Now();
    if (write(fd, record.data(), record.size()) != static_cast<ssize_t>(record.size()) ||
        fdatasync(fd) != 0) {
      std::cerr << "bench_fsync_probe: " << std::strerror(errno) << "\n";
      failed = true;
    }
    if (i >= 10) us.push_back(absl::ToDoubleMicroseconds(absl::Now() - begin));
  }
  close(fd);
  unlink(path.c_str());
  if (failed || us.empty()) return false;
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))];
  };
  std::cout << absl::StrFormat(
                   "{\"workload\":\"fsync\",\"way\":\"%s\",\"count\":%d,\"bytes\":%d,"
                   "\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f}",
                   way, us.size(), record.size(), at(0.5), at(0.99), sum / us.size())
            << std::endl;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("bench_fsync_probe --dir=DIR [--count=N] [--bytes=B]");
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const int count = std::max(1, absl::GetFlag(FLAGS_count));
  const int bytes = std::max(1, absl::GetFlag(FLAGS_bytes));
  const bool ok =
      Probe(dir, "preallocated", true, count, bytes) && Probe(dir, "growing", false, count, bytes);
  return ok ? 0 : 1;
}
