#include "coordinator/rpc/parse_error_interceptor.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coordinator {
namespace {

using grpc::experimental::InterceptionHookPoints;

class ParseErrorInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit ParseErrorInterceptor(grpc::experimental::ServerRpcInfo* info)
      : method_(info->method() != nullptr ? info->method() : ""),
        unary_(info->type() == grpc::experimental::ServerRpcInfo::Type::UNARY) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // A unary request that did not parse reaches interceptors as a null message.
    if (unary_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsed_ = true;
    }
    if (unparsed_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("the request to ", method_,
                         " could not be parsed: it is malformed, or a string field is not valid "
                         "UTF-8")));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  const bool unary_;
  bool unparsed_ = false;
};

}  // namespace

grpc::experimental::Interceptor* ParseErrorInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new ParseErrorInterceptor(info);
}

}  // namespace coordinator
