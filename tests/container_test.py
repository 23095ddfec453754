#!/usr/bin/python3
"""What CI can check of the containers without a Docker engine (docs/containers.md):

  - the Dockerfile's build stage is Debian 12 running scripts/install_deps.sh and `make build`,
    the install script and build command of the README and CI, and its runtime stage is
    debian:bookworm-slim holding the binaries;
  - docker-compose.yml parses and names only binaries that exist, and only flags (on the
    command line or as <BINARY>_<FLAG> environment variables) that those binaries have, as
    their --helpfull lists them;
  - the health checks work: `coordctl health` against a live coordinator and a live agent, and
    the token file docker/make_tokens.sh writes is one the coordinator accepts.

Usage: container_test.py <bin dir> <source dir>
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

BIN = SRC = None

# The binaries in the image and the environment prefix of each (common/env_flags.h).
PREFIXES = {
    "coordinator": "COORDINATOR_",
    "green_agent": "GREEN_AGENT_",
    "purple_agent": "PURPLE_AGENT_",
    "echo_agent": "ECHO_AGENT_",
    "coordctl": "COORDCTL_",
}
# Scripts the image carries besides the binaries (Dockerfile).
SCRIPTS = {"make_tokens"}


def flags_of(binary):
    """The flag names a binary accepts: --helpfull for the absl binaries, --help for coordctl."""
    path = os.path.join(BIN, binary)
    if binary == "coordctl":
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60).stdout
        names = set()
        for option in re.findall(r"--([a-z][a-z0-9_-]*)", out.split("commands:")[0]):
            names.add(option.replace("-", "_"))
        return names
    out = subprocess.run([path, "--helpfull"], capture_output=True, text=True, timeout=60).stdout
    return set(re.findall(r"^\s+--([a-z0-9_]+) \(", out, re.M))


def env_vars_of_coordctl():
    out = subprocess.run([os.path.join(BIN, "coordctl"), "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    return set(re.findall(r"\$(COORDCTL_[A-Z_]+)", out))


def problems_in_compose(compose, flags):
    """Every name in `compose` that is not a binary, flag or variable that exists."""
    problems = []
    for name, service in compose.get("services", {}).items():
        command = service.get("command", [])
        if isinstance(command, str):
            command = shlex.split(command)
        if not command:
            problems.append(f"{name}: no command (the image's default is the coordinator)")
            continue
        binary = command[0]
        if binary in SCRIPTS:
            continue
        if binary not in PREFIXES:
            problems.append(f"{name}: {binary} is not a binary of the image")
            continue
        for arg in command[1:]:
            if arg.startswith("--"):
                flag = arg[2:].split("=", 1)[0]
                if flag not in flags[binary]:
                    problems.append(f"{name}: {binary} has no flag --{flag}")
        environment = service.get("environment", {})
        if isinstance(environment, list):
            environment = dict(e.split("=", 1) for e in environment)
        for variable in environment:
            prefix = PREFIXES[binary]
            if not variable.startswith(prefix):
                problems.append(f"{name}: {variable} is not a {prefix} variable")
                continue
            flag = variable[len(prefix):].lower()
            if binary == "coordctl":
                if variable not in env_vars_of_coordctl():
                    problems.append(f"{name}: coordctl reads no {variable}")
            elif flag not in flags[binary]:
                problems.append(f"{name}: {variable}: {binary} has no flag --{flag}")
        test = service.get("healthcheck", {}).get("test", [])
        if test:
            words = test[1:] if test[0] in ("CMD", "CMD-SHELL") else test
            if words[0] != "coordctl" or "health" not in words:
                problems.append(f"{name}: the health check is not `coordctl ... health`")
            for word in words[1:]:
                if word.startswith("--") and word[2:].replace("-", "_") not in flags["coordctl"]:
                    problems.append(f"{name}: coordctl has no option {word}")
    return problems


class DockerfileTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(SRC, "Dockerfile")) as f:
            self.text = f.read()
        # Instructions, with continuation lines joined and comments dropped.
        joined = re.sub(r"\\\n", " ", self.text)
        self.lines = [l.strip() for l in joined.splitlines() if l.strip() and not l.strip().startswith("#")]
        self.stages = []
        for line in self.lines:
            if line.upper().startswith("FROM "):
                self.stages.append([line])
            elif self.stages:
                self.stages[-1].append(line)

    def test_build_stage_runs_the_install_script_and_the_build_command(self):
        self.assertGreaterEqual(len(self.stages), 2)
        build = self.stages[0]
        self.assertRegex(build[0], r"^FROM debian:bookworm(\s|$)")
        runs = [l for l in build if l.startswith("RUN ")]
        self.assertTrue(any("./scripts/install_deps.sh" in r for r in runs), runs)
        self.assertTrue(any(re.search(r"\bmake build\b", r) for r in runs), runs)
        # The same script and command the README gives and CI runs.
        with open(os.path.join(SRC, "README.md")) as f:
            readme = f.read()
        self.assertIn("make build", readme)
        self.assertIn("scripts/install_deps.sh", readme)
        with open(os.path.join(SRC, ".ci", "run")) as f:
            ci = f.read()
        self.assertIn("./scripts/install_deps.sh", ci)
        self.assertRegex(ci, r"\bmake test\b")
        # `make test` configures BUILD_DIR as `make build` does and builds there.
        with open(os.path.join(SRC, "Makefile")) as f:
            makefile = f.read()
        self.assertRegex(makefile, r"(?m)^build: configure$")
        self.assertRegex(makefile, r"(?m)^test: configure\n(\t.*\n)*\t.*cmake --build \$\(BUILD_DIR\)")

    def test_runtime_stage_is_slim_and_holds_the_binaries(self):
        runtime = self.stages[-1]
        self.assertRegex(runtime[0], r"^FROM debian:bookworm-slim(\s|$)")
        # Its files come from the build stage, or from binaries built outside (the prebuilt
        # stage, `make image IMAGE_FROM=build/bin`), as ARG RUNTIME_FROM chooses.
        self.assertTrue(any(l.startswith("COPY --from=runtime-files") for l in runtime), runtime)
        self.assertIn("ARG RUNTIME_FROM=build", self.lines)
        self.assertIn("FROM ${RUNTIME_FROM} AS runtime-files", self.lines)
        self.assertTrue(any(l.startswith("RUN ./docker/collect_runtime.sh") for l in self.stages[0]))
        # Nothing is built or installed from the network in the runtime stage.
        for line in runtime:
            self.assertNotIn("apt-get", line)
            self.assertNotIn("make ", line)
        with open(os.path.join(SRC, "docker", "collect_runtime.sh")) as f:
            collect = f.read()
        for binary in PREFIXES:
            self.assertIn(binary, collect)
            self.assertTrue(os.access(os.path.join(BIN, binary), os.X_OK), binary)
        self.assertTrue(os.path.exists(os.path.join(SRC, "docker", "make_tokens.sh")))

    def test_env_and_cmd_name_real_flags(self):
        flags = {b: flags_of(b) for b in PREFIXES}
        for line in self.stages[-1]:
            if line.startswith("ENV "):
                for variable in re.findall(r"([A-Z][A-Z0-9_]*)=", line):
                    binary = next(b for b, p in PREFIXES.items() if variable.startswith(p))
                    self.assertIn(variable[len(PREFIXES[binary]):].lower(), flags[binary], variable)
            if line.startswith("CMD ") or line.startswith("HEALTHCHECK "):
                for flag in re.findall(r'"--([a-z_]+)', line):
                    binary = "coordctl" if "coordctl" in line else "coordinator"
                    self.assertIn(flag, flags[binary], line)


class ComposeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(SRC, "docker-compose.yml")) as f:
            cls.compose = yaml.safe_load(f)
        cls.flags = {b: flags_of(b) for b in PREFIXES}

    def test_parses_and_has_the_stack(self):
        services = self.compose["services"]
        commands = {s.get("command", [None])[0] for s in services.values()}
        self.assertLessEqual({"coordinator", "green_agent", "purple_agent"}, commands)
        coordinator = next(s for s in services.values() if s.get("command", [None])[0] == "coordinator")
        # Its data on a named volume.
        data_dir = coordinator["environment"]["COORDINATOR_DATA_DIR"]
        volume = next(v for v in coordinator["volumes"] if v.split(":")[1] == data_dir)
        self.assertIn(volume.split(":")[0], self.compose["volumes"])
        self.assertIn("healthcheck", coordinator)
        for service in services.values():
            if service.get("command", [None])[0] in ("green_agent", "purple_agent"):
                prefix = PREFIXES[service["command"][0]]
                self.assertIn(prefix + "COORDINATOR", service["environment"])
                self.assertIn("healthcheck", service)

    def test_names_only_binaries_flags_and_variables_that_exist(self):
        self.assertEqual(problems_in_compose(self.compose, self.flags), [])

    def test_the_check_finds_what_does_not_exist(self):
        bad = yaml.safe_load(yaml.safe_dump(self.compose))
        service = next(iter(s for s in bad["services"].values()
                            if s.get("command", [None])[0] == "coordinator"))
        service["environment"]["COORDINATOR_DATADIR"] = "/data"
        service["command"] = ["coordinator", "--no_such_flag=1"]
        service["healthcheck"]["test"] = ["CMD", "coordctl", "--bogus", "x", "health"]
        bad["services"]["x"] = {"command": ["not_a_binary"]}
        problems = problems_in_compose(bad, self.flags)
        self.assertEqual(len(problems), 4, problems)


class HealthTest(unittest.TestCase):
    def start(self, args, needle="listening on"):
        process = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   text=True)
        self.addCleanup(lambda: (process.kill(), process.wait(), process.stderr.close()))
        deadline = time.time() + 60
        while time.time() < deadline:
            line = process.stderr.readline()
            if not line:
                self.fail(f"{args[0]} exited before \"{needle}\"")
            match = re.search(needle + r" 127\.0\.0\.1:(\d+)", line)
            if match:
                return match.group(1)
        self.fail(f"no \"{needle}\" from {args[0]}")

    def coordctl(self, *args):
        return subprocess.run([os.path.join(BIN, "coordctl"), "--timeout", "10s", *args],
                              capture_output=True, text=True, timeout=60)

    def test_health_of_a_coordinator_with_the_generated_tokens_and_of_an_agent(self):
        with tempfile.TemporaryDirectory() as tmp:
            secrets = os.path.join(tmp, "secrets")
            os.mkdir(secrets)
            subprocess.run(["sh", os.path.join(SRC, "docker", "make_tokens.sh"), secrets],
                           check=True, capture_output=True, timeout=60)
            port = self.start([os.path.join(BIN, "coordinator"), "--listen=127.0.0.1:0",
                               "--http_listen=", "--data_dir=" + os.path.join(tmp, "data"),
                               "--token_file=" + os.path.join(secrets, "tokens.json")])
            health = self.coordctl("--target", "127.0.0.1:" + port, "health")
            self.assertEqual(health.returncode, 0, health.stderr)
            self.assertEqual(health.stdout.strip(), "SERVING")
            # The generated tokens work: the admin's, and not a made-up one.
            ok = self.coordctl("--target", "127.0.0.1:" + port, "--auth-token-file",
                               os.path.join(secrets, "admin.token"), "context", "list")
            self.assertEqual(ok.returncode, 0, ok.stderr)
            fake = os.path.join(tmp, "fake.token")
            with open(fake, "w") as f:
                f.write("0" * 64)
            refused = self.coordctl("--target", "127.0.0.1:" + port, "--auth-token-file", fake,
                                    "context", "list")
            self.assertEqual(refused.returncode, 3)
            self.assertIn("UNAUTHENTICATED", refused.stderr)
            # An agent answers the health check too (its container health check).
            agent_port = self.start([os.path.join(BIN, "green_agent"), "--listen=127.0.0.1:0",
                                     "--coordinator=127.0.0.1:" + port,
                                     "--auth_token_file=" + os.path.join(secrets, "green.token"),
                                     "--tasks_dir=" + os.path.join(SRC, "examples", "tasks"),
                                     "--workspaces_dir=" + os.path.join(tmp, "ws")],
                                    needle="agent green listening on")
            agent = self.coordctl("--target", "127.0.0.1:" + agent_port, "health")
            self.assertEqual(agent.returncode, 0, agent.stderr)
            self.assertEqual(agent.stdout.strip(), "SERVING")
            # Nothing listens: a clear failure, not SERVING.
            down = self.coordctl("--target", "127.0.0.1:1", "--timeout", "2s", "health")
            self.assertNotEqual(down.returncode, 0)
            # make_tokens keeps existing tokens.
            with open(os.path.join(secrets, "tokens.json")) as f:
                before = f.read()
            subprocess.run(["sh", os.path.join(SRC, "docker", "make_tokens.sh"), secrets],
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(secrets, "tokens.json")) as f:
                self.assertEqual(f.read(), before)


if __name__ == "__main__":
    BIN, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
