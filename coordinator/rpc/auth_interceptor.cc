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

// The verdict of every call in flight, keyed by its server context, with the token source that
// made it. An entry lives exactly as long as its interceptor, which gRPC destroys with the call.
class CallRegistry {
 public:
  struct Verdict {
    absl::StatusOr<Caller> caller;
    TokenSource* tokens = nullptr;  // null without authentication
  };

  static CallRegistry& Get() {
    static auto* registry = new CallRegistry();
    return *registry;
  }

  void Put(const grpc::ServerContextBase* context, Verdict verdict) {
    absl::MutexLock lock(&mu_);
    calls_.insert_or_assign(context, std::move(verdict));
  }
  void Remove(const grpc::ServerContextBase* context) {
    absl::MutexLock lock(&mu_);
    calls_.erase(context);
  }
  Verdict Find(const grpc::ServerContextBase* context) {
    {
      absl::MutexLock lock(&mu_);
      auto it = calls_.find(context);
      if (it != calls_.end()) return it->second;
    }
    if (servers_with_auth_.load() > 0) {
      return {absl::PermissionDeniedError("no authorization decision was made for this call")};
    }
    return {Caller{}};
  }

  std::atomic<int> servers_with_auth_{0};

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<const grpc::ServerContextBase*, Verdict> calls_ ABSL_GUARDED_BY(mu_);
};

class AuthInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(grpc::experimental::ServerRpcInfo* info, TokenSource* tokens)
      : info_(info), tokens_(tokens) {}

  ~AuthInterceptor() override {
    if (registered_) CallRegistry::Get().Remove(info_->server_context());
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      absl::StatusOr<Caller> caller = Caller{};
      if (tokens_ != nullptr) {
        std::vector<absl::string_view> authorization;
        const auto* metadata = methods->GetRecvInitialMetadata();
        auto [begin, end] = metadata->equal_range("authorization");
        for (auto it = begin; it != end; ++it) {
          authorization.emplace_back(it->second.data(), it->second.size());
        }
        caller = tokens_->Current()->Authorize(info_->method() != nullptr ? info_->method() : "",
                                               authorization, absl::Now());
      }
      CallRegistry::Get().Put(info_->server_context(), {std::move(caller), tokens_});
      registered_ = true;
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  TokenSource* tokens_;  // owned by the factory, which outlives the server
  bool registered_ = false;
};

}  // namespace

AuthInterceptorFactory::AuthInterceptorFactory(std::shared_ptr<TokenSource> tokens)
    : tokens_(std::move(tokens)) {
  if (tokens_ != nullptr) ++CallRegistry::Get().servers_with_auth_;
}

AuthInterceptorFactory::~AuthInterceptorFactory() {
  if (tokens_ != nullptr) --CallRegistry::Get().servers_with_auth_;
}

grpc::experimental::Interceptor* AuthInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new AuthInterceptor(info, tokens_.get());
}

absl::StatusOr<Caller> CallerOf(const grpc::ServerContextBase* context) {
  return CallRegistry::Get().Find(context).caller;
}

grpc::Status TokenRevokedStatus() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "the token this stream was opened with was revoked or has expired");
}

std::unique_ptr<TokenSource::Registration> OnCallerTokenRevoked(
    const grpc::ServerContextBase* context, std::function<void()> abort) {
  CallRegistry::Verdict verdict = CallRegistry::Get().Find(context);
  if (verdict.tokens == nullptr || !verdict.caller.ok()) return nullptr;
  return verdict.tokens->OnRevoke(*verdict.caller, std::move(abort));
}

}  // namespace coordinator
