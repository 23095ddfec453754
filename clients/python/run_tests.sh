#!/usr/bin/env bash
# The Python client's tests, as ctest runs them (examples/python/CMakeLists.txt):
#
#   run_tests.sh install <venv dir>
#       a fresh venv on Debian's python3 with its grpcio and protobuf (--system-site-packages),
#       and the client installed into it exactly as the README says (pip
#       --no-build-isolation; --no-index too, so that nothing is fetched from anywhere).
#   run_tests.sh test <venv dir> <bin dir> <pytest args...>
#       pytest from that venv against the binaries in <bin dir> (COORD_BIN_DIR).
#
# PYTHON picks the interpreter (default /usr/bin/python3, Debian's: a python3 earlier on PATH,
# such as a pyenv one, would not have Debian's grpcio).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}

case "${1:-}" in
  install)
    venv=$2
    rm -rf "$venv"
    "$python" -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation \
      --no-index "$repo/clients/python"
    ;;
  test)
    venv=$(realpath "$2")
    bin_dir=$(realpath "$3")
    shift 3
    if [ ! -x "$venv/bin/python" ]; then
      echo "run_tests.sh: no venv at $venv (run: run_tests.sh install $venv)" >&2
      exit 1
    fi
    # Test paths given relative to here stay valid after the cd below.
    args=()
    for arg in "$@"; do
      if [ -e "$arg" ]; then args+=("$(realpath "$arg")"); else args+=("$arg"); fi
    done
    set -- "${args[@]}"
    # From the venv's directory, so that the checkout's coordinator_client (which has no
    # generated stubs) is never the one imported; and no caches written into the checkout.
    cd "$venv"
    COORD_BIN_DIR=$bin_dir PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" -m pytest \
      -p no:cacheprovider -q "$@"
    ;;
  *)
    echo "usage: run_tests.sh install <venv dir> | test <venv dir> <bin dir> <pytest args...>" >&2
    exit 2
    ;;
esac
