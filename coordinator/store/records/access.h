// Who a store call acts for, as far as per-principal ownership goes (docs/security.md,
// "Ownership"). The stores keep the owner of what a call creates (a retry task's owner, a run's
// claimants) and, for a scoped caller, check it inside the transaction that reads the record,
// so the answer cannot turn between the check and the change. Knows nothing of tokens or gRPC:
// coordinator/rpc/auth.h makes one from the caller of a call (AccessOf).
#ifndef COORDINATOR_STORE_RECORDS_ACCESS_H_
#define COORDINATOR_STORE_RECORDS_ACCESS_H_

#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace coordinator {

struct Access {
  // The principal a call acts for: recorded as the owner of what it creates. Empty when the
  // coordinator runs without authentication (the record then has no owner).
  std::string principal;
  // True for an agent principal: it reaches only what it owns. False (the default) for admins,
  // readers (their role lets them only read) and calls without authentication.
  bool scoped = false;

  // Unscoped and without a principal: what in-process callers and tests use by default.
  static Access Unscoped() { return Access(); }
  // A scoped agent principal.
  static Access Agent(std::string principal) { return Access{std::move(principal), true}; }
  // An unscoped principal (an admin).
  static Access Admin(std::string principal) { return Access{std::move(principal), false}; }

  // Whether the caller may reach a record owned by `owner`. A record without an owner (stored
  // before ownership, or without authentication) belongs to nobody: no scoped caller owns it.
  bool Owns(absl::string_view owner) const {
    return !scoped || (!owner.empty() && owner == principal);
  }
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_ACCESS_H_
