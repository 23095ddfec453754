#!/usr/bin/env bash
# Installs the Debian 12 packages the coordinator builds and tests with, only when one is missing.
# Nothing is downloaded from anywhere but Debian's package archive. Extra packages named as
# arguments (CI passes clang-format) are installed the same way; the argument `containers` stands
# for what `make image` and the container stack test need (podman, docs/containers.md).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  lld  # the linker CMake picks when it is there (COORD_LLD): five times quicker than GNU ld here
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev librocksdb-dev libgtest-dev libgmock-dev libcpp-httplib-dev libssl-dev
  libcpptoml-dev  # coordctl scenario: the platforms' scenario files are TOML
  jq redis-server redis-tools gnuplot-nox  # make bench: its peers (bench/peers/) and the plot;
  # jq also for scripts/compat/ (the ARIA drop-in scripts read fields with it)
  bsdextrautils  # column: scripts/compat/aria-iteration-breaker.sh lays out its status table
  openssl  # the TLS tests make their own certificates with the openssl CLI
  python3-yaml  # tests/container_test.py parses docker-compose.yml
  clang libclang-rt-14-dev  # the compiler of both builds (Makefile); its runtime for ASan and libFuzzer
  python3-grpcio python3-protobuf  # examples/python/example.py and its test (/usr/bin/python3)
  # clients/python: installed into a venv over Debian's grpcio and protobuf (pip
  # --no-build-isolation, so setuptools and wheel are Debian's too), tested with pytest
  python3-venv python3-pip python3-setuptools python3-wheel python3-pytest python3-mypy
  chromium  # the web console's browser test (tests/console/), headless
  etcd-server etcd-client  # the etcd backend: its tests start clusters (tests/etcd_cluster.sh)
)
# podman and runc (crun fails on hybrid cgroups; docker/containers.conf), podman-compose,
# debootstrap for the base images, and what podman only recommends: netavark and aardvark-dns
# (the compose network and its service names), iptables (published ports), catatonit, uidmap
# (rootless podman).
containers=(podman runc podman-compose debootstrap netavark aardvark-dns iptables catatonit uidmap)
for extra in "$@"; do
  if [ "$extra" = containers ]; then
    packages+=("${containers[@]}")
  else
    packages+=("$extra")
  fi
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The interop tests (tests/interop/) run the A2A JavaScript SDK on Node.js: Debian's nodejs and
# npm, only when there is no node at all (a Node.js installed some other way is left alone).
if ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
