#include "agent_runtime/agent_http.h"

#include <utility>

#include "a2a_protocol/bindings.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"

namespace agent_runtime {

namespace a2apb = ::lf::a2a::v1;

a2apb::AgentCard CardAt(a2apb::AgentCard card, const std::string& url) {
  card.clear_supported_interfaces();
  const auto add = [&](const char* binding, const char* version) {
    a2apb::AgentInterface* interface = card.add_supported_interfaces();
    interface->set_url(url);
    interface->set_protocol_binding(binding);
    interface->set_protocol_version(version);
  };
  add(a2a_protocol::kBindingJsonRpc, a2a_protocol::kVersion);
  add(a2a_protocol::kBindingHttpJson, a2a_protocol::kVersion);
  add(a2a_protocol::kBindingJsonRpc, a2a_protocol::v03::kVersion);
  return card;
}

absl::StatusOr<a2apb::AgentCard> AgentHttp::Cards::Card(const std::optional<std::string>& agent,
                                                        const std::string& base_url) {
  if (agent.has_value()) {
    return absl::NotFoundError(
        "this agent serves one card, at /.well-known/agent-card.json (no agents below it)");
  }
  return CardAt(card_, card_url_.empty() ? absl::StrCat(base_url, "/") : card_url_);
}

absl::StatusOr<std::unique_ptr<AgentHttp>> AgentHttp::Start(
    const std::string& listen, std::string card_url, a2apb::AgentCard card,
    std::shared_ptr<grpc::Channel> channel) {
  std::unique_ptr<AgentHttp> http(new AgentHttp());
  http->cards_ = std::make_unique<Cards>(std::move(card_url), std::move(card));
  http->bindings_ = std::make_unique<a2a_http::A2AHttpBindings>(
      std::move(channel), http->cards_.get(), a2a_http::HttpBindingOptions{});
  a2a_http::A2AHttpBindings* bindings = http->bindings_.get();
  absl::StatusOr<std::unique_ptr<a2a_http::HttpServer>> server = a2a_http::HttpServer::Start(
      listen, [bindings](httplib::Server& s) { bindings->Install(s, "http"); });
  if (!server.ok()) return server.status();
  http->server_ = *std::move(server);
  return http;
}

AgentHttp::~AgentHttp() { Stop(); }

void AgentHttp::Stop() {
  if (server_ != nullptr) server_->Stop();
}

}  // namespace agent_runtime
