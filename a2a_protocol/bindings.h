// The names of the A2A v1.0 protocol bindings, exactly as an agent card's
// supportedInterfaces[].protocolBinding spells them (specification section 5.3).
#ifndef A2A_PROTOCOL_BINDINGS_H_
#define A2A_PROTOCOL_BINDINGS_H_

namespace a2a_protocol {

inline constexpr char kBindingGrpc[] = "GRPC";
inline constexpr char kBindingJsonRpc[] = "JSONRPC";
inline constexpr char kBindingHttpJson[] = "HTTP+JSON";

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_BINDINGS_H_
