"""Several replicas behind one DNS name: a target "dns://<dns server>/<name>:<port>" is given to
gRPC as it is, and its c-ares resolver asks that server. Two replicas on one etcd data set listen
on the same port on 127.0.0.1 and 127.0.0.2; a DNS server of the test's own answers for the name
with both addresses; the client keeps working after the replica it used is killed -9.
tests/dns_target_process_test.cc does the same for coordctl and the C++ channel."""

from __future__ import annotations

import pathlib
import re
import shutil
import socket
import struct
import subprocess
import threading
import urllib.request
from typing import Dict, Iterator, List, Tuple

import pytest

from coordinator_client import Coordinator, Unavailable
from coordinator_client.testing import CoordinatorProcess

NAME = "coordinators.test"
ADDRESSES = ("127.0.0.1", "127.0.0.2")
ETCD_CLUSTER = pathlib.Path(__file__).resolve().parents[3] / "tests" / "etcd_cluster.sh"


class LoopbackDns:
    """An authoritative DNS server for NAME on 127.0.0.1 (UDP, a free port): A queries get
    ADDRESSES, other queries for NAME an empty answer, other names NXDOMAIN."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port = self.socket.getsockname()[1]
        self.queries: Dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self.socket.recvfrom(512)
            except socket.timeout:
                continue
            reply = self._answer(query)
            if reply:
                self.socket.sendto(reply, peer)

    def _answer(self, query: bytes) -> bytes:
        if len(query) < 12 or query[2] & 0x80 or struct.unpack(">H", query[4:6])[0] != 1:
            return b""
        at, labels = 12, []
        while at < len(query) and query[at]:
            length = query[at]
            if length > 63 or at + 1 + length >= len(query):
                return b""
            labels.append(query[at + 1:at + 1 + length].decode("ascii", "replace"))
            at += 1 + length
        if at + 5 > len(query):
            return b""
        qtype = struct.unpack(">H", query[at + 1:at + 3])[0]
        name = ".".join(labels).lower()
        self.queries[name] = self.queries.get(name, 0) + 1
        ours = name == NAME
        answers = [b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(a)
                   for a in ADDRESSES] if ours and qtype == 1 else []
        flags = 0x8480 | (query[2] & 0x01) << 8 | (0 if ours else 3)
        header = query[:2] + struct.pack(">HHHHH", flags, 1, len(answers), 0, 0)
        return header + query[12:at + 5] + b"".join(answers)


def port_free_on_both() -> int:
    for _ in range(20):
        with socket.socket() as first, socket.socket() as second:
            first.bind((ADDRESSES[0], 0))
            port = first.getsockname()[1]
            try:
                second.bind((ADDRESSES[1], port))
            except OSError:
                continue
            return port
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


@pytest.fixture
def replicas(tmp_path: pathlib.Path) -> Iterator[Tuple[int, List[CoordinatorProcess]]]:
    """(port, [the replica on 127.0.0.1, the one on 127.0.0.2]) on a one-member etcd."""
    if shutil.which("etcd") is None or shutil.which("etcdctl") is None:
        pytest.skip("etcd is not installed (scripts/install_deps.sh installs it)")
    cluster = tmp_path / "etcd"
    subprocess.run(["bash", str(ETCD_CLUSTER), "start", str(cluster), "1"], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    started: List[CoordinatorProcess] = []
    try:
        url = (cluster / "url").read_text().strip()
        port = port_free_on_both()
        for address in ADDRESSES:
            started.append(CoordinatorProcess(
                data_dir=str(tmp_path / address),
                args=[f"--store={url}", "--etcd_prefix=/dns/", f"--listen={address}:{port}",
                      f"--replica_name={address}"]).start())
        yield port, started
    finally:
        for replica in started:
            if replica.running:
                replica.kill()
        subprocess.run(["bash", str(ETCD_CLUSTER), "stop", str(cluster)], timeout=60)


@pytest.fixture
def dns() -> Iterator[LoopbackDns]:
    server = LoopbackDns()
    try:
        yield server
    finally:
        server.close()


def get_contexts_served(replica: CoordinatorProcess) -> float:
    """GetContext calls the replica answered OK, from its /metrics."""
    url = f"http://127.0.0.1:{replica.http_port()}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    pattern = (r'^coordinator_grpc_requests_total\{[^}]*method="GetContext"[^}]*code="OK"[^}]*\}'
               r" (\S+)$")
    return sum(float(m.group(1)) for m in re.finditer(pattern, text, re.MULTILINE))


def test_the_client_moves_to_the_next_address_when_its_replica_is_killed(
        replicas: Tuple[int, List[CoordinatorProcess]], dns: LoopbackDns, uid: str) -> None:
    port, both = replicas
    with Coordinator(f"dns://127.0.0.1:{dns.port}/{NAME}:{port}", timeout=20) as c:
        c.contexts.create(f"{uid}-dns", agent="green")
        assert c.contexts[f"{uid}-dns"].agent == "green"
        # The name was resolved by the test's server.
        assert dns.queries.get(NAME, 0) > 0
        served = [get_contexts_served(replica) for replica in both]
        used = 0 if served[0] > 0 else 1
        assert served[used] > 0 and served[1 - used] == 0, served
        both[used].kill()
        # The next calls go to the other replica, which holds the same data.
        assert c.contexts[f"{uid}-dns"].agent == "green"
        c.contexts.create(f"{uid}-after", agent="purple")
        assert c.contexts[f"{uid}-after"].agent == "purple"
        assert get_contexts_served(both[1 - used]) >= 2


def test_a_name_that_does_not_resolve_is_a_clear_error_and_changes_nothing(
        replicas: Tuple[int, List[CoordinatorProcess]], dns: LoopbackDns, uid: str) -> None:
    port, _ = replicas
    with Coordinator(f"dns://127.0.0.1:{dns.port}/nowhere.test:{port}", timeout=2) as c:
        with pytest.raises(Unavailable, match="DNS resolution failed for nowhere.test"):
            c.contexts.create(f"{uid}-nowhere", agent="green")
    assert dns.queries.get("nowhere.test", 0) > 0
    with Coordinator(f"dns://127.0.0.1:{dns.port}/{NAME}:{port}", timeout=20) as c:
        assert f"{uid}-nowhere" not in c.contexts
