// coordctl run ...: a directory of spec files and a JSON list as the items of a run
// (run_commands.h).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "coordctl/run_commands.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {

using coordinator::v1::WorkItem;

std::string Slug(absl::string_view name) {
  std::string slug;
  for (char c : name) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) {
      slug.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug.push_back('-');
    }
    if (slug.size() >= 64) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "spec" : slug;
}

absl::StatusOr<Naming> ParseNaming(absl::string_view word) {
  if (word == "coordinator") return Naming::kCoordinator;
  if (word == "arial") return Naming::kArial;
  return absl::InvalidArgumentError(
      absl::StrCat("--naming takes coordinator or arial, not \"", word.substr(0, 40), "\""));
}

absl::StatusOr<std::vector<WorkItem>> ReadWorkstreams(const std::string& specs_dir,
                                                      const std::string& worktree_root,
                                                      Naming naming) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::path(specs_dir), ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(specs_dir, " is not a directory"));
  }
  std::vector<fs::path> specs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (absl::AsciiStrToLower(it->path().extension().string()) != ".md") continue;
    if (specs.size() == kMaxSpecFiles) {
      return absl::ResourceExhaustedError(
          absl::StrCat(specs_dir, " holds more than ", kMaxSpecFiles, " spec files"));
    }
    specs.push_back(it->path());
  }
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat("cannot list ", specs_dir, ": ", ec.message()));
  if (specs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(specs_dir, " holds no spec files (*.md)"));
  }
  std::sort(specs.begin(), specs.end());
  const fs::path root =
      worktree_root.empty() ? dir.parent_path() / ".worktrees" : fs::absolute(worktree_root);

  std::vector<WorkItem> items;
  absl::flat_hash_set<std::string> used;
  for (const fs::path& spec : specs) {
    std::string id = Slug(spec.stem().string());
    for (int n = 2; used.contains(id); ++n) id = absl::StrCat(Slug(spec.stem().string()), "-", n);
    used.insert(id);
    absl::StatusOr<WorkItem> item = ReadSpecItem(spec.string(), id, root.string(), naming);
    if (!item.ok()) return item.status();
    items.push_back(*std::move(item));
  }
  return items;
}

absl::StatusOr<WorkItem> ReadSpecItem(const std::string& spec_path, const std::string& id,
                                      const std::string& worktree_root, Naming naming) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path spec = fs::weakly_canonical(fs::path(spec_path), ec);
  if (ec || !fs::is_regular_file(spec, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(spec_path, " is not a file"));
  }
  const fs::path root = worktree_root.empty() ? spec.parent_path().parent_path() / ".worktrees"
                                              : fs::absolute(worktree_root);
  std::string title = spec.filename().string();
  std::ifstream in(spec);
  std::string line;
  size_t read = 0;
  while (read < kMaxSpecBytesRead && std::getline(in, line)) {
    read += line.size() + 1;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&text, "# ")) {
      title = std::string(absl::StripAsciiWhitespace(text)).substr(0, 200);
      break;
    }
  }
  WorkItem item;
  item.set_item_id(id);
  item.set_title(title);
  item.set_description(spec.string());
  if (naming == Naming::kArial) {
    item.set_branch(absl::StrCat("arial/", id));
    item.set_worktree(absl::StrCat(".arial/worktrees/", id));
  } else {
    item.set_branch(id);
    item.set_worktree((root / id).string());
  }
  return item;
}

absl::StatusOr<std::vector<WorkItem>> ParseItemsJson(absl::string_view json, size_t max_items) {
  google::protobuf::Value root;
  google::protobuf::util::JsonParseOptions strict;
  if (auto s = google::protobuf::util::JsonStringToMessage(std::string(json), &root, strict);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the items are not JSON: ", OneLine(std::string(s.message()))));
  }
  const google::protobuf::ListValue* list = nullptr;
  if (root.has_list_value()) {
    list = &root.list_value();
  } else if (root.has_struct_value()) {
    auto it = root.struct_value().fields().find("tasks");
    if (it != root.struct_value().fields().end() && it->second.has_list_value()) {
      list = &it->second.list_value();
    }
  }
  if (list == nullptr) {
    return absl::InvalidArgumentError(
        "the items must be a JSON array of items, or an object with a \"tasks\" array");
  }
  if (static_cast<size_t>(list->values_size()) > max_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("the file holds ", list->values_size(), " items; at most ", max_items));
  }
  // WorkItem's input fields; its other fields are the coordinator's (ignored here).
  static const auto* kInput = new absl::flat_hash_set<std::string>{
      "item_id",     "title",   "description",          "level",  "dependencies",
      "owned_files", "files",   "verification",         "branch", "worktree",
      "metadata",    "adapter", "required_capabilities"};
  const google::protobuf::Descriptor* descriptor = WorkItem::descriptor();
  std::vector<WorkItem> items;
  for (int i = 0; i < list->values_size(); ++i) {
    const google::protobuf::Value& value = list->values(i);
    if (!value.has_struct_value()) {
      return absl::InvalidArgumentError(absl::StrCat("item ", i + 1, " is not a JSON object"));
    }
    google::protobuf::Struct known;
    google::protobuf::Struct extra;
    for (const auto& [key, field_value] : value.struct_value().fields()) {
      const google::protobuf::FieldDescriptor* field =
          key == "id" ? descriptor->FindFieldByName("item_id") : descriptor->FindFieldByName(key);
      if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(key);
      if (field == nullptr) {
        (*extra.mutable_fields())[key] = field_value;
      } else if (kInput->contains(field->name())) {
        // Protobuf's parser would take a lone value for a list; a list field must be a list.
        if (field->is_repeated() && !field_value.has_list_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat("item ", i + 1, ": \"", key, "\" must be a list"));
        }
        (*known.mutable_fields())[field->name()] = field_value;
      }
    }
    std::string text;
    (void)google::protobuf::util::MessageToJsonString(known, &text);
    WorkItem& item = items.emplace_back();
    if (auto s = google::protobuf::util::JsonStringToMessage(text, &item, strict); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", i + 1, ": ", OneLine(std::string(s.message()))));
    }
    for (const auto& [key, field_value] : extra.fields()) {
      (*item.mutable_metadata()->mutable_fields())[key] = field_value;
    }
  }
  return items;
}

absl::StatusOr<coordinator::v1::ItemStatus> ParseItemStatus(absl::string_view word) {
  for (coordinator::v1::ItemStatus status :
       {coordinator::v1::ITEM_STATUS_PENDING, coordinator::v1::ITEM_STATUS_RUNNING,
        coordinator::v1::ITEM_STATUS_DONE, coordinator::v1::ITEM_STATUS_FAILED,
        coordinator::v1::ITEM_STATUS_BLOCKED}) {
    std::string name = coordinator::v1::ItemStatus_Name(status);
    absl::string_view lower(name);
    absl::ConsumePrefix(&lower, "ITEM_STATUS_");
    if (absl::AsciiStrToLower(lower) == word) return status;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--status takes pending, running, done, failed or blocked, not \"", word, "\""));
}

}  // namespace coordctl
