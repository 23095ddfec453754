// Domain logic of TaskContexts and their command records, on the storage interface. Validates
// its input (every entry point shares these checks) and knows nothing of gRPC.
#ifndef COORDINATOR_STORE_CONTEXT_STORE_H_
#define COORDINATOR_STORE_CONTEXT_STORE_H_

#include "absl/status/statusor.h"
#include "coordinator/store/limits.h"
#include "coordinator/v1/context.pb.h"
#include "storage/store.h"

namespace coordinator {

class ContextStore {
 public:
  ContextStore(storage::Store* store, Limits limits) : store_(store), limits_(limits) {}

  [[nodiscard]] absl::StatusOr<v1::TaskContext> Create(const v1::TaskContext& context);
  [[nodiscard]] absl::StatusOr<v1::TaskContext> Get(absl::string_view context_id);
  [[nodiscard]] absl::StatusOr<v1::TaskContext> Update(const v1::UpdateContextRequest& request);
  // Removes the context, its command records and its conversation in one atomic write.
  [[nodiscard]] absl::Status Delete(absl::string_view context_id, int64_t expected_version);
  [[nodiscard]] absl::StatusOr<v1::ListContextsResponse> List(
      const v1::ListContextsRequest& request);
  [[nodiscard]] absl::StatusOr<v1::RecordCommandResponse> RecordCommand(
      const v1::RecordCommandRequest& request);
  [[nodiscard]] absl::StatusOr<v1::ListCommandsResponse> ListCommands(
      const v1::ListCommandsRequest& request);

 private:
  [[nodiscard]] absl::Status ValidateMutableFields(const v1::TaskContext& context) const;

  storage::Store* store_;  // not owned
  const Limits limits_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_CONTEXT_STORE_H_
