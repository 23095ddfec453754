// Helpers for the work store's tests (work_store_test, work_model_test).
#ifndef COORDINATOR_STORE_WORK_WORK_TEST_UTIL_H_
#define COORDINATOR_STORE_WORK_WORK_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/work.pb.h"

namespace coordinator {

// An item spec: "id:level:dep1,dep2:cap1,cap2".
inline v1::WorkItem ItemSpec(const std::string& spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  v1::WorkItem item;
  item.set_item_id(parts[0]);
  if (parts.size() > 1) item.set_level(std::stoi(parts[1]));
  if (parts.size() > 2) {
    for (absl::string_view dep : absl::StrSplit(parts[2], ',', absl::SkipEmpty())) {
      item.add_dependencies(std::string(dep));
    }
  }
  if (parts.size() > 3) {
    for (absl::string_view cap : absl::StrSplit(parts[3], ',', absl::SkipEmpty())) {
      item.add_required_capabilities(std::string(cap));
    }
  }
  return item;
}

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_WORK_TEST_UTIL_H_
