// How every client channel of the project reconnects (to a replica, an etcd member, an agent):
// a peer that comes back is used again within a second, not after gRPC's default backoff of up
// to two minutes, and a connection attempt has time to finish on a loaded machine.
//
// gRPC takes GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the least time one connection attempt (TCP,
// then the TLS handshake) is given before it is abandoned, not only as a pause between attempts
// (doc/connection-backoff.md, MIN_CONNECT_TIMEOUT). At 100 ms, a TLS handshake on a loaded
// machine did not finish in time over and over: an etcds:// member stayed unreachable for as long
// as the load lasted (6 starts of 8 failed with both cores busy, none at 5 s). A peer that is
// down answers the attempt at once with a reset, so the longer bound only matters to a handshake
// in progress; callers that must not wait on one attempt bound their own calls.
#ifndef COMMON_RECONNECT_H_
#define COMMON_RECONNECT_H_

#include "grpcpp/support/channel_arguments.h"

namespace common {

inline void SetQuickReconnect(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
}

}  // namespace common

#endif  // COMMON_RECONNECT_H_
