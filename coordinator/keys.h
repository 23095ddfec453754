// The coordinator's key layout (see docs/storage.md). Record-type bytes are on disk: never
// change or reuse one. Everything about one context lives under ContextPrefix(context_id) in
// the contexts family, so one context's records sit together and go together.
#ifndef COORDINATOR_KEYS_H_
#define COORDINATOR_KEYS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "storage/key_codec.h"

namespace coordinator::keys {

// Record types (the first key byte).
inline constexpr uint8_t kContextScoped = 0x10;    // family kContexts
inline constexpr uint8_t kContextsByAgent = 0x20;  // family kIndex

// What follows the context prefix in the kContexts family.
inline constexpr uint8_t kContextHeader = 0x00;        // TaskContext
inline constexpr uint8_t kCommandRecord = 0x01;        // + seq: CommandRecord
inline constexpr uint8_t kConversationMeta = 0x02;     // ConversationMeta
inline constexpr uint8_t kConversationMessage = 0x03;  // + seq: ConversationMessage

inline std::string ContextPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).key();
}
inline std::string ContextHeader(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kContextHeader).key();
}
inline std::string CommandRecord(absl::string_view context_id, uint64_t seq) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kCommandRecord)
      .AddUint64(seq)
      .key();
}
inline std::string CommandPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kCommandRecord).key();
}
inline std::string ConversationMeta(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kConversationMeta).key();
}
inline std::string ConversationMessage(absl::string_view context_id, uint64_t seq) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kConversationMessage)
      .AddUint64(seq)
      .key();
}
inline std::string ConversationPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kConversationMessage)
      .key();
}
inline std::string AgentIndexPrefix(absl::string_view agent) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).key();
}
inline std::string AgentIndex(absl::string_view agent, absl::string_view context_id) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).AddString(context_id).key();
}

}  // namespace coordinator::keys

#endif  // COORDINATOR_KEYS_H_
