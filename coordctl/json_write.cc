#include "coordctl/json_write.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/proto_json.h"

namespace coordctl {
namespace {

using google::protobuf::Value;

class Writer {
 public:
  // `spaced`: ", " and ": " on one line (Python's json.dumps); only with indent 0.
  Writer(int indent, const std::vector<std::string>& key_order, bool spaced = false)
      : indent_(indent), spaced_(spaced) {
    for (size_t i = 0; i < key_order.size(); ++i) rank_.emplace(key_order[i], i);
  }

  void Write(const Value& v, int depth, std::string* out) const {
    switch (v.kind_case()) {
      case Value::kStructValue:
        WriteObject(v.struct_value(), depth, out);
        return;
      case Value::kListValue:
        WriteList(v.list_value(), depth, out);
        return;
      case Value::kNumberValue: {
        const double d = v.number_value();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
          absl::StrAppend(out, static_cast<int64_t>(d));
        } else {
          absl::StrAppend(out, common::CompactJson(v));
        }
        return;
      }
      case Value::kBoolValue:
        absl::StrAppend(out, v.bool_value() ? "true" : "false");
        return;
      case Value::kStringValue:
        absl::StrAppend(out, common::CompactJson(v));
        return;
      default:
        absl::StrAppend(out, "null");
        return;
    }
  }

 private:
  void NewLine(int depth, std::string* out) const {
    if (indent_ == 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(indent_ * depth), ' ');
  }

  void WriteObject(const google::protobuf::Struct& s, int depth, std::string* out) const {
    if (s.fields().empty()) {
      absl::StrAppend(out, "{}");
      return;
    }
    std::vector<std::pair<size_t, const std::string*>> keys;
    for (const auto& [key, unused] : s.fields()) {
      auto it = rank_.find(key);
      keys.emplace_back(it == rank_.end() ? rank_.size() : it->second, &key);
    }
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    });
    out->push_back('{');
    bool first = true;
    for (const auto& [unused, key] : keys) {
      if (!first) absl::StrAppend(out, spaced_ ? ", " : ",");
      first = false;
      NewLine(depth + 1, out);
      Value name;
      name.set_string_value(*key);
      absl::StrAppend(out, common::CompactJson(name), indent_ == 0 && !spaced_ ? ":" : ": ");
      Write(s.fields().at(*key), depth + 1, out);
    }
    NewLine(depth, out);
    out->push_back('}');
  }

  void WriteList(const google::protobuf::ListValue& l, int depth, std::string* out) const {
    if (l.values().empty()) {
      absl::StrAppend(out, "[]");
      return;
    }
    out->push_back('[');
    for (int i = 0; i < l.values_size(); ++i) {
      if (i > 0) absl::StrAppend(out, spaced_ ? ", " : ",");
      NewLine(depth + 1, out);
      Write(l.values(i), depth + 1, out);
    }
    NewLine(depth, out);
    out->push_back(']');
  }

  const int indent_;
  const bool spaced_;
  absl::flat_hash_map<std::string, size_t> rank_;
};

}  // namespace

std::string WriteJson(const Value& value, int indent, const std::vector<std::string>& key_order) {
  std::string out;
  Writer(indent, key_order).Write(value, 0, &out);
  return out;
}

std::string WriteJsonLine(const Value& value, const std::vector<std::string>& key_order) {
  std::string out;
  Writer(0, key_order, /*spaced=*/true).Write(value, 0, &out);
  return out;
}

}  // namespace coordctl
