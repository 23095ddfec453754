// How every binary stops: SIGTERM and SIGINT are blocked before any thread starts (gRPC's and
// RocksDB's threads inherit the mask, so none of them takes the signal), and main() waits for
// one with sigwait, then shuts down in order.
#ifndef COMMON_STOP_SIGNALS_H_
#define COMMON_STOP_SIGNALS_H_

#include <pthread.h>

#include <csignal>

namespace common {

class StopSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread. Construct it before starting any thread.
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }

  // Waits for SIGTERM or SIGINT; returns its name.
  const char* Wait() const {
    int signal_number = 0;
    sigwait(&set_, &signal_number);
    return signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
  }

 private:
  sigset_t set_;
};

}  // namespace common

#endif  // COMMON_STOP_SIGNALS_H_
