#!/usr/bin/env bash
# An etcd cluster on loopback for tests and `make run-cluster`: N members (default 3) of Debian's
# etcd-server 3.4, each on free ports, with the flags the coordinator's etcd backend needs
# (docs/storage.md, "The etcd backend"): --max-txn-ops and --max-request-bytes raised to the
# store's limits, and revision-based auto-compaction.
#
#   etcd_cluster.sh start DIR [N] [tls]
#                                   start N members; DIR/url gets etcd://127.0.0.1:P1,...
#                                   With tls, clients must use TLS with a client certificate
#                                   (etcds://; peers stay plain): DIR/tls/ gets, made with
#                                   openssl, ca.pem, server.pem/.key (IP SAN 127.0.0.1),
#                                   client.pem/.key (signed by ca.pem) and other-ca.pem (a CA
#                                   that signed nothing here).
#   etcd_cluster.sh kill DIR I      kill -9 member I (0-based)
#   etcd_cluster.sh restart DIR I   start member I again on its data and ports
#   etcd_cluster.sh halt DIR        kill every member, keeping their data
#   etcd_cluster.sh resume DIR      start every member again on its data (after halt)
#   etcd_cluster.sh stop DIR        kill every member and remove DIR
#
# Exits 77 with a SKIPPED line when etcd (or, with tls, openssl) is not installed
# (scripts/install_deps.sh installs them).
# Members log to DIR/m<I>.log.
set -euo pipefail
usage="usage: etcd_cluster.sh start|kill|restart|halt|resume|stop DIR [N [tls]|I]"
cmd=${1:?$usage}
dir=${2:?$usage}

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"  # free_port

start_member() {
  local i=$1
  # setsid: the member outlives this script (ctest runs it as a fixture's setup step).
  setsid bash -c "exec $(cat "$dir/m$i.cmd")" >"$dir/m$i.log" 2>&1 </dev/null &
  echo $! >"$dir/m$i.pid"
}

healthy() {
  local url tls=()
  url=$(sed -E 's|^etcds?://||' "$dir/url")
  if [ -e "$dir/tls/ca.pem" ]; then
    tls=(--cacert "$dir/tls/ca.pem" --cert "$dir/tls/client.pem" --key "$dir/tls/client.key")
  fi
  ETCDCTL_API=3 etcdctl --endpoints="$url" "${tls[@]}" --dial-timeout=1s --command-timeout=2s \
    endpoint health >/dev/null 2>&1
}

# A CA, a server certificate for 127.0.0.1 and a client certificate under $1 (EC P-256, valid
# for two days), and a second CA that signed neither.
make_certs() {
  local d=$1
  mkdir -p "$d"
  (
    cd "$d"
    umask 077
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
    ca() {
      key "$1.key"
      openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
    }
    signed() {
      key "$1.key"
      openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
    }
    ca ca coordinator-test-ca
    ca other-ca coordinator-test-other-ca
    # etcd's own gateway connects to the member with the server certificate: clientAuth too.
    signed server 127.0.0.1 \
      "$(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth')"
    signed client coordinator-test-client 'extendedKeyUsage=clientAuth'
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 644 ./*.pem
  )
}

wait_healthy() {
  # Bounded by the clock, not a count of checks (one check may take its timeouts), so that a
  # cluster that does not come up is reported with its logs before ctest's 120 s run out.
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    healthy && return 0
    sleep 0.2
  done
  echo "etcd_cluster.sh: the cluster in $dir did not become healthy in 60 s" >&2
  tail -n 20 "$dir"/m*.log >&2 || true
  return 1
}

case $cmd in
  start)
    members=${3:-3}
    tls=${4:-}
    if [ -n "$tls" ] && [ "$tls" != tls ]; then
      echo "etcd_cluster.sh: the 4th argument is tls or nothing, not $tls" >&2
      exit 2
    fi
    if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
      echo "SKIPPED: etcd is not installed (apt-get install etcd-server etcd-client, or scripts/install_deps.sh)"
      exit 77
    fi
    if [ -n "$tls" ] && ! command -v openssl >/dev/null; then
      echo "SKIPPED: openssl is not installed (apt-get install openssl)"
      exit 77
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    scheme=etcd client_scheme=http client_tls=""
    if [ -n "$tls" ]; then
      make_certs "$dir/tls"
      scheme=etcds client_scheme=https
      client_tls="--cert-file $dir/tls/server.pem --key-file $dir/tls/server.key"
      client_tls+=" --trusted-ca-file $dir/tls/ca.pem --client-cert-auth"
    fi
    declare -a client peer
    cluster=""
    for ((i = 0; i < members; i++)); do
      # Members restart on their ports (restart, resume), so the ports come from free_port.
      client[i]=$(free_port "${client[@]}" "${peer[@]}")
      peer[i]=$(free_port "${client[@]}" "${peer[@]}")
      cluster+="${cluster:+,}m$i=http://127.0.0.1:${peer[i]}"
    done
    url=""
    for ((i = 0; i < members; i++)); do
      url+="${url:+,}127.0.0.1:${client[i]}"
      cat >"$dir/m$i.cmd" <<CMD
etcd --name m$i --data-dir $dir/m$i.data \
  --listen-client-urls $client_scheme://127.0.0.1:${client[i]} \
  --advertise-client-urls $client_scheme://127.0.0.1:${client[i]} $client_tls \
  --listen-peer-urls http://127.0.0.1:${peer[i]} \
  --initial-advertise-peer-urls http://127.0.0.1:${peer[i]} \
  --initial-cluster $cluster --initial-cluster-state new \
  --initial-cluster-token coordinator-test-$$ \
  --max-txn-ops 10000 --max-request-bytes 8388608 \
  --auto-compaction-mode revision --auto-compaction-retention 100000 \
  --logger zap --log-outputs stderr --log-level warn
CMD
    done
    echo "$scheme://$url" >"$dir/url"
    for ((i = 0; i < members; i++)); do start_member "$i"; done
    wait_healthy
    echo "etcd cluster of $members up: $(cat "$dir/url")"
    ;;
  kill)
    i=${3:?member index}
    kill -9 "$(cat "$dir/m$i.pid")" 2>/dev/null || true
    ;;
  restart)
    i=${3:?member index}
    start_member "$i"
    ;;
  halt)
    for pidfile in "$dir"/m*.pid; do
      [ -e "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    done
    ;;
  resume)
    for cmdfile in "$dir"/m*.cmd; do
      i=${cmdfile##*/m}
      start_member "${i%.cmd}"
    done
    wait_healthy
    echo "etcd cluster up again: $(cat "$dir/url")"
    ;;
  stop)
    for pidfile in "$dir"/m*.pid; do
      [ -e "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
  *)
    echo "etcd_cluster.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac
