"""Fixtures of the client's tests: one real coordinator for the session (each test uses ids of
its own), and helpers to start further processes. Run through ctest (`make test`), which sets
COORD_BIN_DIR and installs the package into a venv first (clients/python/run_tests.sh)."""

from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from coordinator_client import Coordinator
from coordinator_client.testing import CoordinatorProcess, LoggedProcess, find_binary

# Expired leases are taken back within 0.1 s, so lease tests wait little.
SERVER_ARGS = ["--reaper_period=100ms"]


@pytest.fixture(scope="session")
def server() -> Iterator[CoordinatorProcess]:
    with CoordinatorProcess(args=SERVER_ARGS) as process:
        yield process


@pytest.fixture
def c(server: CoordinatorProcess) -> Iterator[Coordinator]:
    with Coordinator(server.target, timeout=10.0) as client:
        yield client


@pytest.fixture
def uid() -> str:
    """A prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def green_agent(server: CoordinatorProcess) -> Iterator[str]:
    """echo_agent registered as "green" with the session's coordinator: it answers every
    message with an artifact holding the message's text."""
    agent = LoggedProcess([find_binary("echo_agent"), f"--coordinator={server.target}",
                           "--name=green"])
    try:
        agent.wait_for("registered with the coordinator")
        yield "green"
    finally:
        agent.stop()
