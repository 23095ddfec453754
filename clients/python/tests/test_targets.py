"""Several replicas as one target ("h1:p1,h2:p2"): an address list gRPC fails over along."""

from __future__ import annotations

import pytest

from coordinator_client import Coordinator
from coordinator_client._channel import target_of
from coordinator_client.testing import CoordinatorProcess


def test_a_single_target_is_left_as_it_is() -> None:
    assert target_of("127.0.0.1:50051") == "127.0.0.1:50051"
    assert target_of("coordinator.internal:50051") == "coordinator.internal:50051"


def test_a_list_becomes_one_address_list() -> None:
    assert target_of("127.0.0.1:1,127.0.0.2:2,127.0.0.1:1") == "ipv4:127.0.0.1:1,127.0.0.2:2"
    assert target_of("[::1]:5,[::1]:6") == "ipv6:[::1]:5,[::1]:6"
    assert target_of("localhost:7,127.0.0.2:8") == "ipv4:127.0.0.1:7,127.0.0.2:8"


@pytest.mark.parametrize("bad", [",", "127.0.0.1:1,", "a,b", "127.0.0.1:1,127.0.0.1:0",
                                 "127.0.0.1:1,127.0.0.1:70000", "127.0.0.1:1,:5",
                                 "127.0.0.1:1,[::1]:2", "127.0.0.1:1,no-such-host.invalid:2",
                                 "," * 100000])
def test_malformed_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        target_of(bad)


def test_calls_move_past_a_replica_that_is_down(server: CoordinatorProcess, uid: str) -> None:
    # The first address refuses connections; the client goes on to the live coordinator.
    with Coordinator(f"127.0.0.1:1,{server.target}", timeout=20) as c:
        c.contexts.create(f"{uid}-replicas", agent="green")
        assert c.contexts[f"{uid}-replicas"].agent == "green"
