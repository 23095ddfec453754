// Names the calling thread as `top -H`, `ps -L`, perf and /proc/<pid>/task/*/comm show it, so a
// profile or a stuck process says which of the coordinator's threads is which. Linux keeps 15
// bytes of a name: a longer one is cut.
#ifndef COMMON_THREAD_NAME_H_
#define COMMON_THREAD_NAME_H_

#include <pthread.h>

#include <string>

#include "absl/strings/string_view.h"

namespace common {

inline void SetThreadName(absl::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace common

#endif  // COMMON_THREAD_NAME_H_
