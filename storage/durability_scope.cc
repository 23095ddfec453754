#include "storage/durability_scope.h"

#include <algorithm>
#include <utility>

namespace storage {
namespace {

thread_local DurabilityScope* t_current = nullptr;

}  // namespace

DurabilityScope::DurabilityScope(const Store* store) : store_(store), outer_(t_current) {
  t_current = this;
}

DurabilityScope::~DurabilityScope() { Close(); }

void DurabilityScope::Close() {
  if (!open_) return;
  open_ = false;
  // Scopes close in the reverse order of opening, so this one is the current one.
  if (t_current == this) t_current = outer_;
}

bool DurabilityScope::Defer(const Store* store, uint64_t position) {
  DurabilityScope* scope = t_current;
  if (scope == nullptr || scope->store_ != store) return false;
  scope->needed_ = std::max(scope->needed_, position);
  return true;
}

void DurabilityScope::AfterDurable(const Store* store, Action action) {
  DurabilityScope* scope = t_current;
  if (scope == nullptr || scope->store_ != store) {
    std::move(action)();
    return;
  }
  scope->actions_.push_back(std::move(action));
}

}  // namespace storage
