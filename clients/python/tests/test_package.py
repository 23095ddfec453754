"""The installed package: typed, with stubs generated at build time (not in the source tree)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

import coordinator_client
import coordinator_client._client
from coordinator_client import Coordinator, aio
from coordinator_client._stubs import context_pb2

SOURCE = Path(__file__).resolve().parents[1]


def test_installed_with_generated_stubs_and_py_typed() -> None:
    package = Path(coordinator_client.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_proto" / "coordinator" / "v1" / "context_pb2.py").is_file()
    assert (package / "_proto" / "coordinator" / "v1" / "context_pb2.pyi").is_file()
    assert (package / "_proto" / "a2a" / "v1" / "a2a_pb2_grpc.py").is_file()
    # The descriptors keep the protos' own file names.
    assert context_pb2.DESCRIPTOR.name == "coordinator/v1/context.proto"
    # Run from the venv, not from the checkout; and nothing generated is committed.
    assert package != SOURCE / "coordinator_client"
    tracked = subprocess.run(["git", "-C", str(SOURCE), "ls-files", "*_pb2*"],
                             capture_output=True, text=True)
    if tracked.returncode == 0:  # (not a git checkout: nothing to check)
        assert tracked.stdout == ""


def test_loads_beside_the_build_trees_stubs(server: object) -> None:
    """examples/python/example.py's stubs (<build dir>/python) and these can share a
    process: the same proto file names and contents."""
    build_python = Path(os.environ.get("COORD_BIN_DIR", "/nonexistent")).parent / "python"
    if not (build_python / "coordinator" / "v1" / "context_pb2.py").is_file():
        pytest.skip(f"no stubs in {build_python}")
    code = ("import coordinator_client\n"
            "from coordinator.v1 import context_pb2 as theirs\n"
            "from coordinator_client._stubs import context_pb2 as ours\n"
            "assert theirs.TaskContext.DESCRIPTOR.full_name == "
            "ours.TaskContext.DESCRIPTOR.full_name\n")
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**os.environ, "PYTHONPATH": str(build_python)})


def test_context_manager_closes_the_channel(server: object) -> None:
    target = getattr(server, "target")
    with Coordinator(target) as c:
        assert c.health() == "SERVING"
        assert repr(c) == f"Coordinator({target!r})"
    with pytest.raises(Exception):
        c.health()


def test_type_hints_check(tmp_path: Path) -> None:
    """mypy (Debian's python3-mypy, from scripts/install_deps.sh) finds nothing in the
    installed package."""
    mypy = subprocess.run(["/usr/bin/python3", "-c", "import mypy"], capture_output=True)
    if mypy.returncode != 0:
        pytest.skip("python3-mypy is not installed")
    checked = subprocess.run(
        ["/usr/bin/python3", "-m", "mypy", "--config-file", str(SOURCE / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "--python-executable", sys.executable,
         "-p", "coordinator_client"], cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _public_members(cls: type) -> Dict[str, object]:
    """Public methods and properties of a class, by name."""
    members = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        if isinstance(static, (property, staticmethod, classmethod)) or \
                inspect.isfunction(static):
            members[name] = static
    return members


def test_aio_twin_has_the_same_names() -> None:
    """Every public name of the blocking client is on its asyncio twin (which adds
    contains/delete/count where Python has no awaitable `in`, `del`, `len`)."""
    assert aio.__all__ == coordinator_client._client.__all__
    for name in aio.__all__:
        blocking, twin = getattr(coordinator_client, name), getattr(aio, name)
        missing = set(_public_members(blocking)) - set(_public_members(twin))
        assert not missing, f"aio.{name} lacks {sorted(missing)}"


def test_public_api_has_docstrings() -> None:
    undocumented = []
    for module in (coordinator_client, aio):
        for name in aio.__all__:
            cls = getattr(module, name)
            if not cls.__doc__:
                undocumented.append(f"{module.__name__}.{name}")
            for member, static in _public_members(cls).items():
                doc = (static.__doc__ if isinstance(static, property) else
                       getattr(cls, member).__doc__)
                if not doc:
                    undocumented.append(f"{module.__name__}.{name}.{member}")
    assert not undocumented
