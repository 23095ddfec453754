// Early-return helpers for absl::Status and absl::StatusOr. Abseil 20220623 ships neither, so
// the project keeps this one tiny header instead of repeating the if/return dance everywhere.
#ifndef COMMON_STATUS_MACROS_H_
#define COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                                      \
  do {                                                             \
    ::absl::Status status_macros_status_ = (expr);                 \
    if (!status_macros_status_.ok()) return status_macros_status_; \
  } while (false)

#define STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define STATUS_MACROS_CONCAT_(a, b) STATUS_MACROS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::StatusOr<T>); returns its status when it is not OK, otherwise
// moves the value into `lhs` (which may be a declaration such as `auto x`).
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(STATUS_MACROS_CONCAT_(status_or_value_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

#endif  // COMMON_STATUS_MACROS_H_
