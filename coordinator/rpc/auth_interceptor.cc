#include "coordinator/rpc/auth_interceptor.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace coordinator {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The verdict of every call in flight, keyed by its server context. An entry lives exactly as
// long as its interceptor, which gRPC destroys with the call.
class CallRegistry {
 public:
  static CallRegistry& Get() {
    static auto* registry = new CallRegistry();
    return *registry;
  }

  void Put(const grpc::ServerContextBase* context, absl::StatusOr<Caller> caller) {
    absl::MutexLock lock(&mu_);
    calls_.insert_or_assign(context, std::move(caller));
  }
  void Remove(const grpc::ServerContextBase* context) {
    absl::MutexLock lock(&mu_);
    calls_.erase(context);
  }
  absl::StatusOr<Caller> Find(const grpc::ServerContextBase* context) {
    {
      absl::MutexLock lock(&mu_);
      auto it = calls_.find(context);
      if (it != calls_.end()) return it->second;
    }
    if (servers_with_auth_.load() > 0) {
      return absl::PermissionDeniedError("no authorization decision was made for this call");
    }
    return Caller{};
  }

  std::atomic<int> servers_with_auth_{0};

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<const grpc::ServerContextBase*, absl::StatusOr<Caller>> calls_
      ABSL_GUARDED_BY(mu_);
};

class AuthInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(grpc::experimental::ServerRpcInfo* info, const Authorizer* authorizer)
      : info_(info), authorizer_(authorizer) {}

  ~AuthInterceptor() override {
    if (registered_) CallRegistry::Get().Remove(info_->server_context());
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      absl::StatusOr<Caller> caller = Caller{};
      if (authorizer_ != nullptr) {
        std::vector<absl::string_view> authorization;
        const auto* metadata = methods->GetRecvInitialMetadata();
        auto [begin, end] = metadata->equal_range("authorization");
        for (auto it = begin; it != end; ++it) {
          authorization.emplace_back(it->second.data(), it->second.size());
        }
        caller = authorizer_->Authorize(info_->method() != nullptr ? info_->method() : "",
                                        authorization, absl::Now());
      }
      CallRegistry::Get().Put(info_->server_context(), std::move(caller));
      registered_ = true;
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  const Authorizer* authorizer_;  // owned by the factory, which outlives the server
  bool registered_ = false;
};

}  // namespace

AuthInterceptorFactory::AuthInterceptorFactory(std::shared_ptr<const Authorizer> authorizer)
    : authorizer_(std::move(authorizer)) {
  if (authorizer_ != nullptr) ++CallRegistry::Get().servers_with_auth_;
}

AuthInterceptorFactory::~AuthInterceptorFactory() {
  if (authorizer_ != nullptr) --CallRegistry::Get().servers_with_auth_;
}

grpc::experimental::Interceptor* AuthInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new AuthInterceptor(info, authorizer_.get());
}

absl::StatusOr<Caller> CallerOf(const grpc::ServerContextBase* context) {
  return CallRegistry::Get().Find(context);
}

}  // namespace coordinator
