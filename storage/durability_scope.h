// Completion-based durability for one call. Outside a scope, a store's reads and transactions
// return only once what they saw or wrote is durable: the calling thread waits for the WAL sync.
// While a DurabilityScope for the store is open on the calling thread, they return at once
// instead and note in the scope the log position that must be durable before their results may
// be shown to anyone; the scope's owner then hands that position to Store::WhenDurable, whose
// completion acknowledges the call. So a gRPC handler can run its transaction on the thread that
// received the call and finish the call from the syncer, and no thread waits per call.
//
// Whatever a call does beyond the store must wait for the same completion when it shows what was
// written: domain code publishes such an effect with AfterDurable (the work notifier's events
// carry the changed records to watchers). A wake-up whose receiver reads the store itself needs
// nothing: that read waits for durability on its own thread.
//
// Scopes belong to one thread and nest (the inner one is current until it closes).
#ifndef STORAGE_DURABILITY_SCOPE_H_
#define STORAGE_DURABILITY_SCOPE_H_

#include <cstdint>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace storage {

class Store;

class DurabilityScope {
 public:
  using Action = absl::AnyInvocable<void() &&>;

  // Opens a scope for `store` on this thread.
  explicit DurabilityScope(const Store* store);
  // Closes it if Close was not called.
  ~DurabilityScope();

  DurabilityScope(const DurabilityScope&) = delete;
  DurabilityScope& operator=(const DurabilityScope&) = delete;

  // Closes the scope: from here on this thread waits for durability again. Idempotent.
  void Close();

  // The log position the results of the calls made in the scope need durable (0: none).
  uint64_t needed() const { return needed_; }
  // The effects published with AfterDurable, in order; the owner runs them once `needed()` is
  // durable, and drops them when the sync fails.
  std::vector<Action> TakeActions() { return std::move(actions_); }

  // For stores: when a scope for `store` is open on this thread, notes that `position` must be
  // durable before the results are shown and returns true. Otherwise returns false: the caller
  // waits itself.
  static bool Defer(const Store* store, uint64_t position);

  // For domain code: runs `action` once everything this thread did with `store` so far is
  // durable. With a scope for `store` open on this thread that is when the scope's owner learns
  // that its position is durable (never, when the sync fails); otherwise it is now, because the
  // store calls before it already waited. `action` must be quick and must not use the store.
  static void AfterDurable(const Store* store, Action action);

 private:
  const Store* const store_;
  DurabilityScope* const outer_;
  bool open_ = true;
  uint64_t needed_ = 0;
  std::vector<Action> actions_;
};

}  // namespace storage

#endif  // STORAGE_DURABILITY_SCOPE_H_
