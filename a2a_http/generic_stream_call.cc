#include "a2a_http/generic_stream_call.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/dynamic_message.h"

namespace a2a_http {

std::unique_ptr<google::protobuf::Message> NewMessage(const google::protobuf::Descriptor* type) {
  return std::unique_ptr<google::protobuf::Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(type)->New());
}

std::string MethodPath(const google::protobuf::MethodDescriptor* method) {
  return absl::StrCat("/", method->service()->full_name(), "/", method->name());
}

}  // namespace a2a_http
