"""Real processes for tests: a coordinator started on 127.0.0.1:0 with a temporary data dir, its
port read back from its log and stopped at the end (as tests/process_util.cc does for the C++
tests), and any other process whose log a test waits on (an agent).

    with CoordinatorProcess() as server:
        with Coordinator(server.target) as c:
            ...

Binaries are looked up as $COORD_BIN_DIR/<name> (what ctest sets), else on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, Any, List, Mapping, Optional, Sequence

__all__ = ["CoordinatorProcess", "LoggedProcess", "find_binary"]

_LISTENING = re.compile(r"listening on (\S+):(\d+)")
_CARD = re.compile(r"agent card on https?://[^:/]+:(\d+)")


def find_binary(name: str = "coordinator") -> str:
    """$COORD_BIN_DIR/<name>, else <name> on PATH."""
    bin_dir = os.environ.get("COORD_BIN_DIR")
    if bin_dir:
        return os.path.join(bin_dir, name)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found: set COORD_BIN_DIR to the build's bin dir")
    return found


class LoggedProcess:
    """A child process whose stderr (its log) is collected line by line in `log`, so a test can
    wait for a line instead of sleeping. stdout is collected in `out` the same way."""

    def __init__(self, command: Sequence[str], env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None) -> None:
        self.command = list(command)
        self.log: List[str] = []
        self.out: List[str] = []
        self._changed = threading.Condition()
        self._process = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=dict(env) if env is not None else None,
            cwd=cwd)
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self._process.stderr, self.log),
                             daemon=True),
            threading.Thread(target=self._read, args=(self._process.stdout, self.out),
                             daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> Optional[int]:
        return self._process.poll()

    def _read(self, stream: IO[str], lines: List[str]) -> None:
        for line in stream:
            with self._changed:
                lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _done_reading(self) -> bool:
        return self._process.poll() is not None and not any(r.is_alive() for r in self._readers)

    def wait_for(self, text: str, timeout: float = 30.0, since: int = 0,
                 stdout: bool = False) -> str:
        """The first line (of the log, or of stdout) from line `since` on that contains
        `text`; waits for it. RuntimeError when the process ends first or the timeout passes."""
        lines = self.out if stdout else self.log
        give_up = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in lines[since:]:
                    if text in line:
                        return line
                since = len(lines)
                if self._done_reading():
                    raise RuntimeError(f"{self.command[0]} exited ({self._process.returncode}) "
                                       f"before printing {text!r}:\n{self.describe()}")
                left = give_up - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.command[0]} did not print {text!r} within "
                                       f"{timeout}s:\n{self.describe()}")
                self._changed.wait(left)

    def describe(self) -> str:
        with self._changed:
            return ("--- stdout ---\n" + "\n".join(self.out) + "\n--- stderr ---\n" +
                    "\n".join(self.log))

    def wait(self, timeout: float = 60.0) -> int:
        """Waits for the process to exit (and its output to be read); returns its exit code."""
        code = self._process.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        return code

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> int:
        """SIGKILL (kill -9, as a crash) and wait."""
        if self._process.poll() is None:
            self._process.kill()
        return self.wait()


class CoordinatorProcess:
    """One coordinator, restartable on the same data dir and port.

    Args:
        data_dir: RocksDB directory (default: a temporary one, removed by close()).
        args: further coordinator flags (--token_file=..., --tls_cert_file=..., ...).
        binary: the coordinator binary (default: find_binary()).
        start_timeout: seconds to wait for "listening on" in the log.
    """

    def __init__(self, data_dir: Optional[str] = None, args: Sequence[str] = (),
                 binary: Optional[str] = None, start_timeout: float = 60.0,
                 env: Optional[Mapping[str, str]] = None) -> None:
        self.binary = binary or find_binary()
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="coord-data-")
        self.args = list(args)
        self.start_timeout = start_timeout
        self.env = env
        self.port = 0
        self.process: Optional[LoggedProcess] = None

    @property
    def target(self) -> str:
        """127.0.0.1:<port> of the gRPC port."""
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def start(self) -> "CoordinatorProcess":
        """Starts the coordinator and waits until it listens. After a stop() or kill() it
        starts again on the same data dir and the same port, so clients keep their target."""
        self.process = LoggedProcess(
            [self.binary, f"--listen=127.0.0.1:{self.port}", "--http_listen=127.0.0.1:0",
             f"--data_dir={self.data_dir}", *self.args], env=self.env)
        line = self.process.wait_for("listening on ", self.start_timeout)
        match = _LISTENING.search(line)
        if not match:
            raise RuntimeError(f"no port in: {line}")
        self.port = int(match.group(2))
        return self

    def http_port(self) -> int:
        """The port of the HTTP listener (agent cards, JSON-RPC)."""
        assert self.process is not None, "not started"
        match = _CARD.search(self.process.wait_for("agent card on "))
        if not match:
            raise RuntimeError("no HTTP port in the log")
        return int(match.group(1))

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (drain, flush, close the database) and wait; returns the exit code."""
        return self.process.stop(timeout) if self.process is not None else 0

    def kill(self) -> int:
        """kill -9, as a crash."""
        return self.process.kill() if self.process is not None else 0

    def restart(self) -> "CoordinatorProcess":
        """stop(), then start() on the same data dir and port."""
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stops the process (killing it if it does not stop) and removes an own data dir."""
        try:
            self.stop()
        except subprocess.TimeoutExpired:
            self.kill()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "CoordinatorProcess":
        return self.start() if self.process is None else self

    def __exit__(self, *_: Any) -> None:
        self.close()
