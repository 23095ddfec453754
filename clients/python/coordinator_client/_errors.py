"""Exceptions of coordinator_client: one class per gRPC status code the coordinator answers.

Every failed call raises a CoordinatorError carrying the status code and the server's message.
The subclasses say what to do next, as the codes do (docs/api.md): NotFound is also a
KeyError (so mapping access reads like a dict), InvalidArgument a ValueError, DeadlineExceeded
a TimeoutError. Wrong argument types never reach the server: they are TypeError or ValueError
raised before the call.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Type

import grpc

__all__ = [
    "AlreadyExists",
    "Cancelled",
    "Conflict",
    "CoordinatorError",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "NothingToClaim",
    "PermissionDenied",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
]


class CoordinatorError(Exception):
    """A call to the coordinator failed.

    Attributes:
        code: the gRPC status code.
        message: the server's message (or gRPC's, when the call never reached the server).
        method: the RPC that failed, such as "ContextService.GetContext" ("" when unknown).
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None,
                 method: str = "") -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.method = method

    def __str__(self) -> str:
        where = f" ({self.method})" if self.method else ""
        return f"{self.code.name}: {self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, {self.code}, {self.method!r})"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.message, self.code, self.method))


class NotFound(CoordinatorError, KeyError):
    """NOT_FOUND: there is no such record. Also a KeyError, as for a dict."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(CoordinatorError):
    """ALREADY_EXISTS: the id is taken (a context created twice, a task blocked twice)."""

    code = grpc.StatusCode.ALREADY_EXISTS


class Conflict(CoordinatorError):
    """ABORTED: a version conflict; read the record again and retry the change."""

    code = grpc.StatusCode.ABORTED


class InvalidArgument(CoordinatorError, ValueError):
    """INVALID_ARGUMENT: fix the request. Nothing was written."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class FailedPrecondition(CoordinatorError):
    """FAILED_PRECONDITION: do not retry until something changes (a lost lease, a blocked task)."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class PermissionDenied(CoordinatorError):
    """PERMISSION_DENIED: the token's role or principal may not do this (docs/security.md)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(CoordinatorError):
    """UNAUTHENTICATED: no token, or one the coordinator does not know (or that expired)."""

    code = grpc.StatusCode.UNAUTHENTICATED


class ResourceExhausted(CoordinatorError):
    """RESOURCE_EXHAUSTED: a request over a size limit (the message names the field and flag),
    or a server too busy to queue the call."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(CoordinatorError):
    """UNAVAILABLE: the coordinator could not be reached (or its disk failed) for the whole of
    the call's timeout; every attempt within it was retried with backoff."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(CoordinatorError, TimeoutError):
    """DEADLINE_EXCEEDED: the call's timeout passed. Also a TimeoutError."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Cancelled(CoordinatorError):
    """CANCELLED: the call was cancelled (the channel was closed under it)."""

    code = grpc.StatusCode.CANCELLED


class Unimplemented(CoordinatorError):
    """UNIMPLEMENTED: the coordinator does not have this RPC (an older server)."""

    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(CoordinatorError):
    """INTERNAL, UNKNOWN or DATA_LOSS: a bug or a damaged database; report it."""

    code = grpc.StatusCode.INTERNAL


_BY_CODE: Dict[grpc.StatusCode, Type[CoordinatorError]] = {
    cls.code: cls
    for cls in (NotFound, AlreadyExists, Conflict, InvalidArgument, FailedPrecondition,
                PermissionDenied, Unauthenticated, ResourceExhausted, Unavailable,
                DeadlineExceeded, Cancelled, Unimplemented, Internal)
}
_BY_CODE[grpc.StatusCode.UNKNOWN] = Internal
_BY_CODE[grpc.StatusCode.DATA_LOSS] = Internal


def error_for(code: grpc.StatusCode, message: str, method: str = "") -> CoordinatorError:
    """The exception for `code`: its own subclass, else CoordinatorError itself."""
    cls = _BY_CODE.get(code, CoordinatorError)
    return cls(message, code, method)


def from_rpc_error(error: grpc.RpcError, method: str = "") -> CoordinatorError:
    """Converts what grpc raised (a grpc.Call, sync or aio) into a CoordinatorError."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "", method)


class NothingToClaim(Exception):
    """WorkService.Claim found no claimable item (within the wait, when one was given).

    Attributes:
        run_id: the run.
        stalled: True when no item can become claimable without a person (the run is
            completed, failed or blocked): a worker can stop asking.
        retry_after: seconds until an item in backoff becomes claimable (None if none is).
    """

    def __init__(self, run_id: str, stalled: bool, retry_after: Optional[float]) -> None:
        why = ("the run is stalled (completed, failed or blocked)" if stalled else
               f"an item is in backoff for {retry_after:.3g}s more" if retry_after is not None
               else "every claimable item is taken")
        super().__init__(f"nothing to claim in run {run_id}: {why}")
        self.run_id = run_id
        self.stalled = stalled
        self.retry_after = retry_after

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.run_id, self.stalled, self.retry_after))
