"""Channel settings shared by the blocking and the asyncio client: credentials as coordctl takes
them (common/grpc_client.h), channel options, the retry policy, the health check's codec, and the
halves of Coordinator and of the transport that do no I/O.

The bearer token is sent as "authorization: Bearer <token>" metadata on every call rather than as
gRPC call credentials, which gRPC refuses to send over a plaintext channel; the coordinator on
loopback without TLS still checks tokens when it has a --token_file.
"""

from __future__ import annotations

import ipaddress
import os
import random
import socket
import time
from typing import Any, List, Optional, Sequence, Tuple, Union

import grpc

from coordinator_client._errors import CoordinatorError, error_for, from_rpc_error
from coordinator_client._values import Seconds, check_positive_seconds, check_str

PathOrPem = Union[str, "os.PathLike[str]", bytes]
Metadata = Tuple[Tuple[str, str], ...]

# Larger than a file a client should be handed by mistake; the C++ clients use the same bound.
_MAX_FILE_BYTES = 1 << 20

# A conversation page is at most 3 MiB (docs/api.md), a run's item may be larger.
MAX_RECEIVE_BYTES = 64 << 20

# Reconnect within a second after a coordinator restart (gRPC's own backoff grows to two
# minutes), as agent_runtime::CoordinatorChannel does (common/reconnect.h): gRPC takes the
# "minimum reconnect backoff" as the least time one connection attempt, the TLS handshake
# included, is given before it is abandoned, so it is 5 s, not the 100 ms at which a handshake on
# a loaded machine was cut off attempt after attempt. The name is resolved again at most every
# 100 ms: gRPC resolves it again after a lost connection before it reconnects, and its default
# spacing (30 s, shortened by backoff) kept a Python client from a restarted coordinator for
# about five seconds (test_restart.py measures the reconnection).
CHANNEL_OPTIONS: List[Tuple[str, Any]] = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 5000),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.dns_min_time_between_resolutions_ms", 100),
    ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
]

# Codes a call is retried on: UNAVAILABLE (no connection, or a server that is draining or whose
# disk failed), and CANCELLED, which a draining server gives calls it has not started. (A
# client's own cancellation is never retried: the only one is closing the channel.)
RETRIED_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})

# Retries: 50 ms, doubling, at most 1 s between attempts, within the call's timeout.
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0


def retries_spent(retried: Tuple[grpc.StatusCode, str], attempts: int, budget: float,
                  method: str) -> CoordinatorError:
    """The error of a call whose retries used up its timeout: that of the last retried
    failure (also when the last attempt ran out of time, e.g. while connecting)."""
    code, details = retried
    return error_for(code, f"{details} (tried {attempts} times in {budget:.3g}s)", method)


def next_backoff(backoff: float) -> float:
    return min(backoff * 2, MAX_BACKOFF)


class Retries:
    """The retry decisions of one call, made without I/O: how long each attempt may take, and
    after a failure either the pause before the next attempt or the error to give up with. Both
    transports' `call` loop over it (send, and on an RpcError sleep for `pause_after`)."""

    def __init__(self, name: str, budget: float) -> None:
        self.name = name
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.attempts = 0
        self._backoff = FIRST_BACKOFF
        self._retried: Optional[Tuple[grpc.StatusCode, str]] = None

    def attempt_timeout(self) -> float:
        """Counts one more attempt; returns the time it may take."""
        self.attempts += 1
        return max(self.deadline - time.monotonic(), 0.001)

    def pause_after(self, error: Any, closed: bool) -> float:
        """The pause before the next attempt after `error` (a grpc.RpcError, sync or aio).
        Raises the CoordinatorError to give up with: at once for a code that is not retried
        (or once the channel is closed), else when the time is spent."""
        code, details = error.code(), error.details() or ""
        if code in RETRIED_CODES and not closed:
            self._retried = (code, details)
            pause = min(self._backoff, self.deadline - time.monotonic())
            if pause > 0:
                self._backoff = next_backoff(self._backoff)
                return pause
        if self._retried is not None and code in RETRIED_CODES | {
                grpc.StatusCode.DEADLINE_EXCEEDED}:
            raise retries_spent(self._retried, self.attempts, self.budget, self.name) from None
        raise from_rpc_error(error, self.name) from None


def jitter(attempt: int) -> float:
    """A short random pause before re-reading after a version conflict (spreads out writers
    that keep colliding): up to 1 ms, doubling per attempt, at most 50 ms."""
    return random.uniform(0, min(0.001 * (2 ** min(attempt, 6)), 0.05))


def _read_small_file(what: str, path: Union[str, "os.PathLike[str]"]) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ValueError(f"{what} {os.fspath(path)}: cannot read it ({error.strerror})") from None
    if len(data) > _MAX_FILE_BYTES:
        raise ValueError(f"{what} {os.fspath(path)}: larger than {_MAX_FILE_BYTES} bytes")
    return data


def _check_token(token: str, where: str) -> str:
    if not token:
        raise ValueError(f"{where} is empty")
    if any(not 0x21 <= ord(c) <= 0x7E for c in token):
        raise ValueError(f"{where} must be one token: visible ASCII characters without spaces")
    return token


def load_token(token: Optional[str], token_file: Optional[Union[str, "os.PathLike[str]"]]
               ) -> Optional[str]:
    """The bearer token: given, or read from a file holding it alone (surrounding whitespace
    is ignored), as coordctl's --auth-token-file."""
    if token is not None and token_file is not None:
        raise ValueError("give token or token_file, not both")
    if token is not None:
        check_str("token", token)
        return _check_token(token, "token")
    if token_file is not None:
        if not isinstance(token_file, (str, os.PathLike)):
            raise TypeError(f"token_file must be a path, not {type(token_file).__name__}")
        text = _read_small_file("auth token file", token_file).decode("ascii", "replace").strip()
        return _check_token(text, f"auth token file {os.fspath(token_file)}")
    return None


def load_ca(tls_ca: Optional[PathOrPem]) -> Optional[bytes]:
    """PEM root certificates: bytes as they are, or read from a path (coordctl's
    --tls-ca-file)."""
    if tls_ca is None:
        return None
    if isinstance(tls_ca, bytes):
        pem, where = tls_ca, "tls_ca"
    elif isinstance(tls_ca, (str, os.PathLike)):
        pem, where = _read_small_file("TLS CA file", tls_ca), f"TLS CA file {os.fspath(tls_ca)}"
    else:
        raise TypeError(f"tls_ca must be a path or PEM bytes, not {type(tls_ca).__name__}")
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise ValueError(f"{where} holds no PEM certificate")
    return pem


def metadata_for(token: Optional[str]) -> Metadata:
    return (("authorization", f"Bearer {token}"),) if token else ()


def channel_options(tls_server_name: Optional[str],
                    extra: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, Any]]:
    options = list(CHANNEL_OPTIONS)
    if tls_server_name is not None:
        options.append(("grpc.ssl_target_name_override", check_str("tls_server_name",
                                                                   tls_server_name)))
    if extra:
        options.extend(extra)
    return options


def credentials_for(ca_pem: Optional[bytes]) -> Optional[grpc.ChannelCredentials]:
    return grpc.ssl_channel_credentials(root_certificates=ca_pem) if ca_pem is not None else None


def target_of(target: Any) -> str:
    """The gRPC target for `target`: as it is, or, for replicas of one etcd data set listed as
    "h1:p1,h2:p2", one address list ("ipv4:..." or "ipv6:...") that gRPC's pick_first walks, so
    that calls move to the next replica when one is down. Names in a list are resolved here,
    once (IPv4 addresses first). With TLS over a list, pass tls_server_name (the name the
    replicas' certificate holds)."""
    check_str("target", target)
    if not target:
        raise ValueError("target must be host:port, not empty")
    if "," not in target:
        return target
    v4: List[str] = []
    v6: List[str] = []
    for entry in target.split(","):
        host, sep, port_text = entry.rpartition(":")
        if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"target list {target!r}: {entry!r} is not host:port")
        port = int(port_text)
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            (v4 if address.version == 4 else v6).append(
                f"{address}:{port}" if address.version == 4 else f"[{address}]:{port}")
            continue
        for family, out in ((socket.AF_INET, v4), (socket.AF_INET6, v6)):
            try:
                infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
            except socket.gaierror:
                continue
            for info in infos:
                ip = info[4][0]
                out.append(f"{ip}:{port}" if family == socket.AF_INET else f"[{ip}]:{port}")
            break
        else:
            raise ValueError(f"target list {target!r}: cannot resolve {host!r}")
    if v4 and v6:
        raise ValueError(f"target list {target!r} mixes IPv4 and IPv6 addresses; list one family")
    unique = list(dict.fromkeys(v4 or v6))
    return ("ipv4:" if v4 else "ipv6:") + ",".join(unique)


class ChannelSettings:
    """A Coordinator's arguments, checked and loaded before anything connects: the target, the
    timeout of one call, the metadata every call carries, the TLS credentials (None: plaintext)
    and the channel options."""

    def __init__(self, target: str, token: Optional[str], token_file: Any,
                 tls_ca: Optional[PathOrPem], tls_server_name: Optional[str], timeout: Seconds,
                 options: Optional[Sequence[Tuple[str, Any]]]) -> None:
        self.target = target_of(target)
        self.timeout = check_positive_seconds("timeout", timeout)
        self.metadata: Metadata = metadata_for(load_token(token, token_file))
        self.credentials = credentials_for(load_ca(tls_ca))
        self.options = channel_options(tls_server_name, options)


class TransportBase:
    """What both transports hold: the target, the timeout of one call, the metadata every call
    carries, and the channel, which each opens its own way (grpc or grpc.aio)."""

    def __init__(self, settings: ChannelSettings) -> None:
        self.target = settings.target
        self.timeout = settings.timeout
        self.metadata = settings.metadata
        self.closed = False
        self.channel = self._open_channel(settings)

    def _open_channel(self, settings: ChannelSettings) -> Any:
        raise NotImplementedError


class CoordinatorBase:
    """What both Coordinators share: the arguments (see coordinator_client.Coordinator), and the
    target and timeout. A subclass's _connect makes its transport and services."""

    _t: TransportBase

    def __init__(self, target: str = "127.0.0.1:50051", token: Optional[str] = None,
                 tls_ca: Optional[PathOrPem] = None, timeout: Seconds = 10.0, *,
                 token_file: Optional[Any] = None, tls_server_name: Optional[str] = None,
                 options: Optional[Sequence[Tuple[str, Any]]] = None) -> None:
        self._connect(ChannelSettings(target, token, token_file, tls_ca, tls_server_name,
                                      timeout, options))

    def _connect(self, settings: ChannelSettings) -> None:
        raise NotImplementedError

    @property
    def target(self) -> str:
        """host:port of the coordinator."""
        return self._t.target

    @property
    def timeout(self) -> float:
        """Seconds one call may take, retries included."""
        return self._t.timeout


# grpc.health.v1 by hand: HealthCheckRequest{string service = 1} and
# HealthCheckResponse{ServingStatus status = 1}. Two fields do not justify generating (and
# registering in the process's descriptor pool) a second copy of grpc/health/v1/health.proto.
HEALTH_METHOD = "/grpc.health.v1.Health/Check"
_SERVING_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def encode_health_request(service: str) -> bytes:
    data = service.encode("utf-8")
    if not data:
        return b""
    length, prefix = len(data), bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        prefix.append(byte | (0x80 if length else 0))
        if not length:
            break
    return b"\x0a" + bytes(prefix) + data


def decode_health_response(data: bytes) -> str:
    # The only field is a small enum: tag 0x08, then one varint byte.
    status = data[1] if len(data) >= 2 and data[0] == 0x08 else 0
    return _SERVING_STATUS.get(status, str(status))


def health_method(channel: Any) -> Any:
    """Health.Check on a channel, grpc or grpc.aio (both make it the same way)."""
    return channel.unary_unary(HEALTH_METHOD, request_serializer=encode_health_request,
                               response_deserializer=decode_health_response)
