"""The generated protobuf and gRPC modules, imported in one place.

They are generated from protos/ when the package is built (clients/python/setup.py) and are not
in the source tree; importing the package from a checkout that was never built says how to
build it.
"""

# pylint: disable=unused-import
try:
    from coordinator_client._proto.a2a.v1 import a2a_pb2, a2a_pb2_grpc
    from coordinator_client._proto.coordinator.v1 import (
        agent_registry_pb2,
        agent_registry_pb2_grpc,
        breaker_pb2,
        breaker_pb2_grpc,
        context_pb2,
        context_pb2_grpc,
        conversation_pb2,
        conversation_pb2_grpc,
        task_state_pb2,
        task_state_pb2_grpc,
        work_pb2,
        work_pb2_grpc,
    )
except ImportError as error:  # pragma: no cover - only in an unbuilt checkout
    raise ImportError(
        "coordinator_client's generated stubs are missing: install the package "
        "(python3 -m venv --system-site-packages .venv && .venv/bin/pip install "
        "--no-build-isolation ./clients/python), which generates them from protos/"
    ) from error

__all__ = [
    "a2a_pb2",
    "a2a_pb2_grpc",
    "agent_registry_pb2",
    "agent_registry_pb2_grpc",
    "breaker_pb2",
    "breaker_pb2_grpc",
    "context_pb2",
    "context_pb2_grpc",
    "conversation_pb2",
    "conversation_pb2_grpc",
    "task_state_pb2",
    "task_state_pb2_grpc",
    "work_pb2",
    "work_pb2_grpc",
]
