"""Bearer tokens (a --token_file, docs/security.md) and TLS (a self-signed certificate made
with openssl, as tests/tls_process_test.cc does), as coordctl uses them."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Dict, Iterator, Tuple

import pytest

from coordinator_client import (
    Coordinator,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)
from coordinator_client.testing import CoordinatorProcess

ROLES = {"ops": "admin", "green": "agent", "dash": "reader"}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    return {principal: secrets.token_hex(32) for principal in ROLES}


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory,
                tokens: Dict[str, str]) -> Iterator[CoordinatorProcess]:
    path = tmp_path_factory.mktemp("auth") / "tokens.json"
    path.write_text(json.dumps({"tokens": [
        {"token": tokens[p], "principal": p, "role": role} for p, role in ROLES.items()]}))
    path.chmod(0o600)
    with CoordinatorProcess(args=[f"--token_file={path}"]) as server:
        yield server


def test_tokens_and_roles(auth_server: CoordinatorProcess, tokens: Dict[str, str],
                          tmp_path: Path, uid: str) -> None:
    with Coordinator(auth_server.target) as anonymous:
        assert anonymous.health() == "SERVING"  # health stays open
        with pytest.raises(Unauthenticated, match="Bearer"):
            anonymous.contexts.get(uid)
    with Coordinator(auth_server.target, token="x" * 32) as stranger:
        with pytest.raises(Unauthenticated, match="not known"):
            stranger.contexts.get(uid)
    token_file = tmp_path / "green.token"
    token_file.write_text(f"  {tokens['green']}\n")  # whitespace around it is ignored
    with Coordinator(auth_server.target, token_file=token_file) as green:
        ctx = green.contexts.create(uid, workspace_dir="/ws")
        assert ctx.agent == "green"  # an agent's context is its own
        ctx.record_command("ls")
        ctx.conversation.append("agent", "execute: ls", tokens=3)
    with Coordinator(auth_server.target, token=tokens["dash"]) as reader:
        assert reader.contexts[uid].command_count == 1
        with pytest.raises(PermissionDenied):
            reader.contexts[uid].record_command("rm -rf /")
        with pytest.raises(PermissionDenied):
            reader.conversations[uid].append("user", "forged")
    with Coordinator(auth_server.target, token=tokens["ops"]) as admin:
        assert admin.contexts[uid].command_count == 1  # nothing the reader tried was written
        assert admin.conversations[uid].totals() == (1, 3)
        del admin.contexts[uid]


def test_token_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="visible ASCII"):
        Coordinator("127.0.0.1:1", token="two words")
    with pytest.raises(ValueError, match="not both"):
        Coordinator("127.0.0.1:1", token="a" * 16, token_file=tmp_path / "t")
    with pytest.raises(ValueError, match="cannot read"):
        Coordinator("127.0.0.1:1", token_file=tmp_path / "missing")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        Coordinator("127.0.0.1:1", token_file=tmp_path / "empty")
    with pytest.raises(TypeError):
        Coordinator("127.0.0.1:1", token=12345)  # type: ignore[arg-type]


def make_certificate(directory: Path, name: str) -> Tuple[Path, Path]:
    cert, key = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls(tmp_path: Path, uid: str) -> None:
    cert, key = make_certificate(tmp_path, "server")
    other, _ = make_certificate(tmp_path, "other")
    with CoordinatorProcess(args=[f"--tls_cert_file={cert}", f"--tls_key_file={key}"]) as server:
        with Coordinator(server.target, tls_ca=cert) as c:
            c.contexts.create(uid, labels={"over": "tls"})
        with Coordinator(f"localhost:{server.port}", tls_ca=cert.read_bytes()) as c:
            assert c.contexts[uid].labels == {"over": "tls"}
        with Coordinator(server.target, tls_ca=str(cert), tls_server_name="localhost") as c:
            assert uid in c.contexts
        # A plaintext client, and a TLS client that trusts another certificate, get no answer.
        with Coordinator(server.target, timeout=0.5) as plain:
            with pytest.raises(Unavailable):
                plain.contexts.get(uid)
        with Coordinator(server.target, tls_ca=other, timeout=0.5) as untrusting:
            with pytest.raises(Unavailable):
                untrusting.contexts.get(uid)
    (tmp_path / "not-a-cert.pem").write_text("hello")
    with pytest.raises(ValueError, match="no PEM certificate"):
        Coordinator("127.0.0.1:1", tls_ca=tmp_path / "not-a-cert.pem")
    with pytest.raises(ValueError, match="cannot read"):
        Coordinator("127.0.0.1:1", tls_ca=os.fspath(tmp_path / "missing.pem"))
