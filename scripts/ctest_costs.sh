#!/usr/bin/env bash
# Writes tests/ctest_costs.txt from a build directory's last ctest runs: the tests that took 3 s
# or more, with their mean seconds. `make test` and `make test-asan` seed a fresh build
# directory's ctest cost data with it, so that ctest starts the longest tests first on a fresh
# clone too (without it every test costs the same, and a 100 s test may start last).
#   scripts/ctest_costs.sh build
set -euo pipefail
data=${1:?usage: scripts/ctest_costs.sh <build dir>}/Testing/Temporary/CTestCostData.txt
[[ -f $data ]] || { echo "no $data: run ctest there first" >&2; exit 1; }
out=$(dirname "$0")/../tests/ctest_costs.txt
{
  awk '$0 == "---" { exit } NF == 3 && $3 >= 3 { printf "%s 1 %.1f\n", $1, $3 }' "$data" | sort -k3,3 -rn
  echo "---"
} >"$out"
echo "wrote $(($(wc -l <"$out") - 1)) tests to $out"
