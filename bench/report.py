#!/usr/bin/python3
"""bench/run.sh's helper: turns peer output into result lines and the results into RESULTS.md.

  report.py redis-csv <concurrency>           redis-benchmark --csv on stdin -> JSON lines
  report.py latencies <name> <tasks> <concurrency> <seconds> <files...>
                                               per-update latencies (us, one a line) -> a line
  report.py render <results.jsonl> <out dir> [<baseline results.jsonl>]
                                               writes RESULTS.md and, with gnuplot,
                                               throughput.png; the baseline (the committed run
                                               this one replaces) gives the no-regression targets

Standard library only (Debian's /usr/bin/python3).
"""
import csv
import json
import os
import subprocess
import sys

CONCURRENCIES = [1, 16, 64]


def percentile(values, q):
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


def redis_csv(concurrency):
    for row in csv.DictReader(sys.stdin):
        test = row["test"].split()[0].lower()
        print(json.dumps({
            "workload": f"redis_{test}", "concurrency": concurrency,
            "throughput": float(row["rps"]), "errors": 0,
            "p50_us": float(row["p50_latency_ms"]) * 1000,
            "p99_us": float(row["p99_latency_ms"]) * 1000,
            "max_us": float(row["max_latency_ms"]) * 1000}))


def latencies(name, tasks, concurrency, seconds, files):
    values = []
    for path in files:
        with open(path) as f:
            values.extend(float(line) for line in f if line.strip())
    values.sort()
    print(json.dumps({
        "workload": name, "tasks": tasks, "concurrency": concurrency, "calls": len(values),
        "errors": 0, "seconds": seconds, "throughput": round(len(values) / seconds, 1),
        "p50_us": percentile(values, 0.5), "p99_us": percentile(values, 0.99),
        "p999_us": percentile(values, 0.999)}))


# ---------------------------------------------------------------------------------------------
# render


class Results:
    def __init__(self, path):
        with open(path) as f:
            self.lines = [json.loads(line) for line in f if line.strip()]

    def find(self, workload, **match):
        for r in self.lines:
            if r.get("workload") == workload and all(r.get(k) == v for k, v in match.items()):
                return r
        return None

    def series(self, workload, **match):
        """{concurrency: line} of one workload."""
        out = {}
        for r in self.lines:
            if r.get("workload") == workload and all(r.get(k) == v for k, v in match.items()):
                if "concurrency" in r:
                    out[r["concurrency"]] = r
        return out


def ms(us):
    return f"{us / 1000:.2f}"


def cell(r):
    if r is None:
        return "n/a"
    text = f"{r['throughput']:,.0f}/s (p50 {ms(r['p50_us'])}, p99 {ms(r['p99_us'])} ms"
    if r.get("cpu_us_per_call") is not None:
        # The server's CPU time (user + system, from /proc) in the window, per successful call.
        text += f"; server CPU {r['cpu_us_per_call']:,.0f} us/call"
    if r.get("peer_cpu_us_per_call") is not None:
        text += f", agent {r['peer_cpu_us_per_call']:,.0f}"
    if r.get("client_cpu_us_per_call") is not None:
        text += f", client {r['client_cpu_us_per_call']:,.0f}"
    text += ")"
    if r.get("errors"):
        text += f" **{r['errors']} errors**"
    return text


def ratio(ours, theirs):
    if ours is None or theirs is None or not theirs.get("throughput"):
        return "n/a"
    return f"{ours['throughput'] / theirs['throughput']:,.2f}x"


def table(title, ours_name, ours, peers, note=None):
    """A table: our series and each peer's, with the ratio ours/theirs per concurrency."""
    out = [f"### {title}", ""]
    if note:
        out += [note, ""]
    header = "| system | " + " | ".join(f"{c} stream{'s' if c > 1 else ''}"
                                          for c in CONCURRENCIES)
    header += " | " + " | ".join(f"ours/theirs @{c}" for c in CONCURRENCIES) + " |"
    out += [header, "|" + " --- |" * (1 + 2 * len(CONCURRENCIES))]
    out.append(f"| **{ours_name}** | " + " | ".join(cell(ours.get(c)) for c in CONCURRENCIES)
               + " |" + " |" * len(CONCURRENCIES))
    for name, series in peers:
        out.append(f"| {name} | " + " | ".join(cell(series.get(c)) for c in CONCURRENCIES)
                   + " | " + " | ".join(ratio(ours.get(c), series.get(c))
                                         for c in CONCURRENCIES) + " |")
    out.append("")
    return out


def best(series):
    rs = [r for r in series.values() if r]
    return max(rs, key=lambda r: r["throughput"]) if rs else None


def fsync_reference(res):
    """The disk's best durable append of a run: the faster of the probe's two ways."""
    probes = [r for r in res.lines if r.get("workload") == "fsync"]
    return min(probes, key=lambda r: r["p50_us"]) if probes else {}


def render(path, out_dir, baseline=None):
    res = Results(path)
    base = Results(baseline) if baseline and os.path.exists(baseline) else None
    machine = res.find("machine") or {}
    probes = [r for r in res.lines if r.get("workload") == "fsync"]
    fsync = fsync_reference(res)
    w1 = res.series("fail", system="coordinator")
    w2 = res.series("attempt", system="coordinator")
    w3 = res.series("history", system="coordinator")
    w4 = res.series("get", system="coordinator")
    w5 = res.series("a2a", system="coordinator", label="gateway")
    direct = res.series("a2a", label="direct")
    js = res.series("a2a", label="js_sdk")
    js_pg = res.series("a2a", label="js_sdk_pg")
    w5_rpc = res.series("a2a", label="gateway_jsonrpc")
    ping = res.series("ping", system="coordinator")
    w5_tmpfs = res.series("a2a", label="gateway_tmpfs")
    js_rpc = res.series("a2a", label="js_sdk_jsonrpc")
    pg = res.find("postgres") or {}
    redis = {t: res.series(f"redis_{t}") for t in ("incr", "rpush", "hset", "get")}
    jq = {n: res.series("shell_jq", tasks=n) for n in (50, 1000)}
    py = {n: res.series("python_json", tasks=n) for n in (50, 1000)}
    points = sorted((r for r in res.lines if r.get("workload") == "history_point"),
                    key=lambda r: r["history"])
    serving = res.find("serving") or {}
    rss = res.find("rss") or {}
    disk = res.find("disk") or {}
    big_load = res.find("bulk_load", contexts=disk.get("contexts"))
    w4_load = res.find("bulk_load", contexts=100000)
    errors = sum(r.get("errors", 0) for r in res.lines)

    md = ["# Benchmark results", "",
          "Generated by `make bench` (`bench/run.sh`, `bench/report.py`); rerunning the command "
          "regenerates this file, `throughput.png` and `results.jsonl` (the raw figures). "
          "Client and server run on the same machine. Every figure is measured in the same "
          "run as the peers it is compared with; absolute numbers drift between runs on a "
          "shared machine, the ratios much less.", ""]
    md += ["## Machine", "",
           f"- run started {machine.get('started', '?')} at commit `{machine.get('commit', '?')}`"
           f", load average at start {machine.get('loadavg', '?')}",
           f"- {machine.get('cores', '?')} cores ({machine.get('cpu', '?')}), "
           f"{machine.get('mem_kb', 0) / 1024 / 1024:.1f} GiB memory, Linux "
           f"{machine.get('kernel', '?')}, data dirs on {machine.get('fs', '?')}",
           f"- the disk's fsync latency, measured by `bench_fsync_probe` (append "
           f"{fsync.get('bytes', '?')} bytes + fdatasync, {fsync.get('count', '?')} times, in the "
           f"benchmark's own directory): **p50 {ms(fsync.get('p50_us', 0))} ms, p99 "
           f"{ms(fsync.get('p99_us', 0))} ms** (" + ", ".join(
               f"{r['way']}: p50 {ms(r['p50_us'])}, p99 {ms(r['p99_us'])} ms" for r in probes)
           + "; the faster is the reference)",
           f"- windows: {machine.get('warmup', '?')} s warm-up, then {machine.get('seconds', '?')}"
           f" s measured per concurrency for the coordinator and the A2A servers, "
           f"{machine.get('peer_seconds', '?')} s for the JSON-file peers; redis-benchmark runs a "
           "fixed request count sized to about that long",
           f"- errors in the whole run: **{errors}**", ""]

    # Targets -------------------------------------------------------------------------------
    targets = []

    def target(name, value_text, met, detail=""):
        targets.append((name, value_text, met, detail))

    def gateway_cost(series, c):
        """1 - gateway/direct throughput at concurrency c, or None without both figures."""
        if series.get(c) and direct.get(c) and direct[c]["throughput"]:
            return 1 - series[c]["throughput"] / direct[c]["throughput"]
        return None

    def floor(series, peer, c, what):
        """' (what: x)': the floor's ratio against the same peer, shown beside a target."""
        if series.get(c) and peer.get(c) and peer[c]["throughput"]:
            return f" ({what}: {series[c]['throughput'] / peer[c]['throughput']:.2f}x)"
        return ""

    # Issue 16's targets.
    w1_64, incr_64 = w1.get(64), redis["incr"].get(64)
    if w1_64 and incr_64:
        rr = w1_64["throughput"] / incr_64["throughput"]
        target("W1 @64 >= 0.5x Redis INCR @64 (appendfsync always)",
               f"{rr:.2f}x" + floor(ping, redis["incr"], 64, "a health check"), rr >= 0.5)
    if w1_64:
        target("W1 @64 p99 <= 10 ms", f"{ms(w1_64['p99_us'])} ms", w1_64["p99_us"] <= 10000)
    w1_1 = w1.get(1)
    if w1_1 and fsync.get("p50_us"):
        rr = w1_1["p50_us"] / fsync["p50_us"]
        target("W1 @1 p50 <= 2x the disk's fsync p50",
               f"{ms(w1_1['p50_us'])} ms = {rr:.2f}x of {ms(fsync['p50_us'])} ms", rr <= 2)
    for label, peer, want in (("shell+jq", jq, 300), ("Python JSON", py, 50)):
        for n in (50, 1000):
            b = best(peer[n])
            if w1_64 and b and b["throughput"]:
                rr = w1_64["throughput"] / b["throughput"]
                target(f"W1 @64 >= {want}x {label} ({n} tasks, its best concurrency)",
                       f"{rr:,.0f}x", rr >= want)
    for c in (16, 64):
        if w5.get(c) and js.get(c) and js[c]["throughput"]:
            rr = w5[c]["throughput"] / js[c]["throughput"]
            target(f"W5 @{c} >= 1.5x the JavaScript SDK's in-memory server",
                   f"{rr:.2f}x" + floor(w5_tmpfs, js, c, "data on tmpfs"), rr >= 1.5)
    for c in (16, 64):
        if w5.get(c) and js_pg.get(c) and js_pg[c]["throughput"]:
            rr = w5[c]["throughput"] / js_pg[c]["throughput"]
            target(f"W5 @{c} >= 3x the JavaScript SDK on PostgreSQL", f"{rr:.2f}x", rr >= 3)
    for c in (16, 64):
        cost, tmpfs_cost = gateway_cost(w5, c), gateway_cost(w5_tmpfs, c)
        if cost is not None:
            tmpfs_text = f" (data on tmpfs: {tmpfs_cost * 100:.0f}%)" if tmpfs_cost is not None else ""
            target(f"W5 @{c}: the gateway costs <= 60% of direct throughput",
                   f"{cost * 100:.0f}%" + tmpfs_text, cost <= 0.6)
    if len(points) >= 2:
        rr = points[-1]["p50_us"] / points[0]["p50_us"]
        target(f"W3 p50 @{points[-1]['history']:,} <= 1.2x p50 @{points[0]['history']:,} messages",
               f"{rr:.2f}x", rr <= 1.2)
    if rss:
        target(f"{rss['contexts']:,} contexts: peak RSS <= 500 MB",
               f"{rss['hwm_kb'] / 1024:.0f} MB", rss["hwm_kb"] / 1024 <= 500)
    if serving:
        target(f"{disk.get('contexts', 0):,} contexts: serving within 2 s of start",
               f"{serving['serving_ms'] / 1000:.2f} s", serving["serving_ms"] <= 2000)

    # No regression against the committed run this one replaces: the same ratio against the
    # same peer at 64 streams, and the 1,000,000-context figures. A peer's own speed moves with
    # the disk (Redis with appendfsync always follows the fsync latency), so each line shows
    # both runs' fsync p50; 10% is allowed for the machine's noise.
    if base is not None:
        base_fsync = fsync_reference(base)
        base_note = (f"committed run `{(base.find('machine') or {}).get('commit', '?')}`, fsync p50 "
                     f"{ms(base_fsync.get('p50_us', 0))} ms; this run {ms(fsync.get('p50_us', 0))}"
                     " ms")

        def at64(r, workload, **match):
            return r.series(workload, **match).get(64)

        for name, ours, peer in (
                ("W2 IncrementAttempt @64 / Redis INCR @64", ("attempt", {"system": "coordinator"}),
                 ("redis_incr", {})),
                ("W3 AppendMessage @64 / Redis RPUSH @64", ("history", {"system": "coordinator"}),
                 ("redis_rpush", {})),
                ("W4 GetContext @64 / Redis GET @64", ("get", {"system": "coordinator"}),
                 ("redis_get", {}))):
            now = (at64(res, ours[0], **ours[1]), at64(res, peer[0], **peer[1]))
            then = (at64(base, ours[0], **ours[1]), at64(base, peer[0], **peer[1]))
            if all(now) and all(then) and now[1]["throughput"] and then[1]["throughput"]:
                rr_now = now[0]["throughput"] / now[1]["throughput"]
                rr_then = then[0]["throughput"] / then[1]["throughput"]
                target(f"no regression: {name} >= 0.9x the committed run's",
                       f"{rr_now:.2f}x ({base_note}: {rr_then:.2f}x)", rr_now >= 0.9 * rr_then)
        base_rss, base_disk, base_serving = (base.find("rss") or {}, base.find("disk") or {},
                                             base.find("serving") or {})
        if rss and base_rss:
            target("no regression: 1,000,000 contexts' peak RSS <= 1.1x the committed run's",
                   f"{rss['hwm_kb'] / 1024:.0f} MB (committed {base_rss['hwm_kb'] / 1024:.0f} MB)",
                   rss["hwm_kb"] <= 1.1 * base_rss["hwm_kb"])
        if disk.get("contexts") and base_disk.get("contexts"):
            now_b, then_b = (disk["bytes"] / disk["contexts"],
                             base_disk["bytes"] / base_disk["contexts"])
            target("no regression: bytes per context <= 1.1x the committed run's",
                   f"{now_b:.0f} (committed {then_b:.0f})", now_b <= 1.1 * then_b)
        if serving and base_serving:
            # A start is a few hundred ms: 10% of it is below the machine's noise, so the bound
            # is the larger of 1.1x and 0.1 s more.
            bound = max(1.1 * base_serving["serving_ms"], base_serving["serving_ms"] + 100)
            target("no regression: time to serve 1,000,000 contexts <= the committed run's "
                   "(+10% or 0.1 s)",
                   f"{serving['serving_ms'] / 1000:.2f} s (committed "
                   f"{base_serving['serving_ms'] / 1000:.2f} s)", serving["serving_ms"] <= bound)

    md += ["## Targets", "", "| target | this run | met? |", "| --- | --- | --- |"]
    for name, value_text, met, _ in targets:
        md.append(f"| {name} | {value_text} | {'yes' if met else '**no**'} |")
    missed = [t for t in targets if not t[2]]
    md += ["", f"{len(targets) - len(missed)} of {len(targets)} met." +
           (" Every miss is explained under [Misses and profiles](#misses-and-profiles)."
            if missed else ""), ""]

    # The CPU budget of each throughput target: at the throughput a target asks for, the two
    # cores give each call cores * 1e6 / throughput microseconds of CPU in all, for the load
    # generator, the agent (W5) and the coordinator together. What the first two spend per call
    # in this run, taken from the budget, is what is left for the coordinator.
    budgets = []
    cores = machine.get("cores") or 0

    def budget(name, needed, ours, floor_series, c, floor_what):
        r = ours.get(c)
        if not (cores and needed and r and r.get("client_cpu_us_per_call") is not None):
            return
        total = cores * 1e6 / needed
        outside = r["client_cpu_us_per_call"] + (r.get("peer_cpu_us_per_call") or 0)
        parts = f"{r['client_cpu_us_per_call']:,.0f}"
        if r.get("peer_cpu_us_per_call") is not None:
            parts += f" + {r['peer_cpu_us_per_call']:,.0f}"
        left = total - outside
        f = floor_series.get(c) if floor_series else None
        floor_text = (f" ({floor_what}: {f['cpu_us_per_call']:,.0f})"
                      if f and f.get("cpu_us_per_call") is not None else "")
        budgets.append(f"| {name} | {needed:,.0f}/s | {total:,.0f} | {parts} | "
                       + (f"{left:,.0f}" if left > 0 else "**none**")
                       + f" | {r.get('cpu_us_per_call', 0):,.0f}{floor_text} |")

    if incr_64:
        budget("W1 @64 >= 0.5x Redis INCR", 0.5 * incr_64["throughput"], w1, ping, 64,
               "a health check")
    for c in (16, 64):
        if js.get(c):
            budget(f"W5 @{c} >= 1.5x the JS SDK in memory", 1.5 * js[c]["throughput"], w5,
                   w5_tmpfs, c, "data on tmpfs")
    for c in (16, 64):
        if direct.get(c):
            budget(f"W5 @{c}: gateway cost <= 60%", 0.4 * direct[c]["throughput"], w5, w5_tmpfs,
                   c, "data on tmpfs")
    if budgets:
        md += ["### The CPU budget of the throughput targets", "",
               f"At the throughput a target asks for, the machine's {cores} cores give each call "
               "this much CPU in all: for the load generator (`coord_bench`), the agent (W5: "
               "echo_agent behind the gateway) and the coordinator together, since all of them "
               "run here. The load generator's and the agent's CPU per call in this run (from "
               "/proc, the same window) taken from it leave what the coordinator may spend. "
               "Those two were measured at this run's rate; at a higher rate gRPC batches more "
               "and they fall somewhat, so the last columns are estimates, not bounds.", "",
               "| target | throughput it needs | CPU per call at that rate (us) | load generator"
               " (+ agent) now (us) | left for the coordinator (us) | coordinator now (us) |",
               "| --- | --- | --- | --- | --- | --- |"] + budgets + [""]

    # Workload tables ----------------------------------------------------------------------
    md += ["## Workloads", "",
           "Throughput (successful calls per second) with p50 and p99 latency at 1, 16 and 64 "
           "concurrent streams (redis-benchmark clients, writer processes); the last columns are "
           "our throughput divided by the peer's at the same concurrency.", ""]
    md += table("W1 durable update: RecordFailure on distinct tasks", "coordinator RecordFailure",
                w1,
                [("Redis INCR (appendfsync always)", redis["incr"]),
                 ("Redis HSET (appendfsync always)", redis["hset"]),
                 ("shell: flock + jq rewrite, 50 tasks", jq[50]),
                 ("shell: flock + jq rewrite, 1,000 tasks", jq[1000]),
                 ("Python: flock + JSON rewrite, 50 tasks", py[50]),
                 ("Python: flock + JSON rewrite, 1,000 tasks", py[1000])],
                "Each call appends a failure record to one of 1,024 tasks and updates its header "
                "in one WAL-synced transaction; concurrent streams never share a task. The "
                "JSON-file peers append a failure to a random task of the file and rewrite it "
                "(temp file, fsync, rename, directory fsync) under an exclusive flock.")
    md += table("W2 contention: IncrementAttempt on one task", "coordinator IncrementAttempt", w2,
                [("Redis INCR of one key (appendfsync always)", redis["incr"])],
                "Every call is a read-modify-write of the same record (a locked transaction).")
    md += ["### W3 history growth: AppendMessage to one conversation", "",
           "Appends at concurrency 1 to conversations that already hold 10, 10,000 and 100,000 "
           "messages (filled at 64 streams first), measured in 5 interleaved turns so that a "
           "change in the machine's load hits every size alike:", "",
           "| messages before | p50 ms | p99 ms | calls |", "| --- | --- | --- | --- |"]
    for p in points:
        md.append(f"| {p['history']:,} | {ms(p['p50_us'])} | {ms(p['p99_us'])} | {p['calls']} |")
    if len(points) >= 2:
        md += ["", f"Ratio of the last to the first p50: "
               f"**{points[-1]['p50_us'] / points[0]['p50_us']:.2f}x**."]
    md.append("")
    first_w3 = next(iter(w3.values()), None)
    md += table("W3 at concurrency", "coordinator AppendMessage" +
                (f" ({first_w3['history']:,}+ messages)" if first_w3 else ""), w3,
                [("Redis RPUSH to one list (appendfsync always)", redis["rpush"])])
    md += table("W4 read: GetContext at random among 100,000 contexts", "coordinator GetContext",
                w4, [("Redis GET (extra peer, not a target)", redis["get"])],
                "The contexts were written offline with the coordinator's own store code "
                "(`bench_bulk_load`: `ContextStore::Create` on `RocksStore`, exactly the records "
                "CreateContext writes" + (f", {w4_load['rate']:,.0f} contexts/s" if w4_load else "")
                + "); the coordinator then opened that data dir.")
    md += table("W5 A2A: blocking SendMessage to an agent that completes at once",
                "coordinator gateway -> echo_agent (durable)", w5,
                [("echo_agent called directly (no coordinator)", direct),
                 ("A2A JavaScript SDK gRPC server, in-memory task store", js),
                 ("A2A JavaScript SDK gRPC server, DatabaseTaskStore on PostgreSQL"
                  + (f" {pg['version'].split()[0]}" if pg.get("version") else "")
                  + f" (synchronous_commit={pg.get('synchronous_commit', '?')})", js_pg)],
                "Each call sends a new task and waits for its COMPLETED answer (a call whose "
                "answer is not a completed task counts as an error). Through the gateway every "
                "task, message, status change and artifact is stored durably before the answer. "
                "The JavaScript peer is `tests/interop/js_agent.mjs` on `@a2a-js/sdk` 1.3.0 "
                "(`grpcService`, `DefaultRequestHandler`, `InMemoryTaskStore`), driven by the "
                "same load generator; its durable twin is the same agent with `--store=postgres://"
                "...`: the SDK's own `DatabaseTaskStore` (`@a2a-js/sdk/server/database`, kysely + "
                "pg with node-postgres' default pool of 10 connections) on a throwaway PostgreSQL "
                "cluster on loopback started by bench/run.sh (`fsync=on`, `synchronous_commit="
                f"{pg.get('synchronous_commit', '?')}`, `wal_sync_method="
                f"{pg.get('wal_sync_method', '?')}`), its table made by the SDK's `a2a-db upgrade`.")
    gw = [f"@{c}: {gateway_cost(w5, c) * 100:.0f}%" for c in CONCURRENCIES
          if gateway_cost(w5, c) is not None]
    if gw:
        md += ["Gateway cost (1 - gateway/direct throughput): " + ", ".join(gw) + ".", ""]
    md += table("W5 over JSON-RPC: blocking SendMessage as a JSON-RPC call over HTTP",
                "coordinator JSON-RPC binding -> gateway -> echo_agent (durable)", w5_rpc,
                [("A2A JavaScript SDK Express JSON-RPC server, in-memory task store", js_rpc),
                 ("(for reference) coordinator gateway over gRPC", w5)],
                "The same call as W5 as a JSON-RPC `SendMessage` POSTed over keep-alive HTTP/1.1 "
                "(`coord_bench --binding=jsonrpc`: one thread and one cpp-httplib connection per "
                "stream, TCP_NODELAY), to the coordinator's `/agents/echo` and to "
                "`tests/interop/js_rpc_agent.mjs` (`jsonRpcHandler` on Express).")

    if ping or w5_tmpfs:
        md += ["## Floors", "",
               "What the targets' misses are measured against, in the same run: the cheapest call "
               "the coordinator answers, and the gateway with the disk taken away.", ""]
    if ping:
        md += table("A health check: the cheapest call", "coordinator grpc.health.v1.Health/Check",
                    ping,
                    [("Redis INCR (appendfsync always)", redis["incr"]),
                     ("Redis GET", redis["get"]),
                     ("coordinator RecordFailure (W1)", w1),
                     ("coordinator GetContext (W4)", w4)],
                    "`coord_bench --workload=ping` on W1's coordinator after W1: the same load "
                    "generator, transport and interceptors as every workload, then a status read "
                    "and no storage. Its ratio against Redis INCR bounds what any durable call "
                    "could reach against it on this machine with this client; the distance to "
                    "W1 is what storing costs.")
    if w5_tmpfs:
        md += table("W5 with the data on tmpfs: the gateway without the disk",
                    "coordinator gateway -> echo_agent, data dir on tmpfs", w5_tmpfs,
                    [("A2A JavaScript SDK gRPC server, in-memory task store", js),
                     ("echo_agent called directly (no coordinator)", direct),
                     ("coordinator gateway -> echo_agent (durable, W5)", w5)],
                    "The same gateway, agent and load as W5 with the coordinator's data dir on "
                    "`/dev/shm`, where a WAL sync returns at once: every transaction, commit and "
                    "completion still runs, only the disk's wait and work are gone (so nothing "
                    "survives a power loss: a floor, not a mode to run). Its ratio against the "
                    "JavaScript SDK bounds what W5 could reach against it by making the disk "
                    "cheaper.")

    etcd_w1 = res.series("fail", system="coordinator_etcd")
    if etcd_w1:
        md += ["## The etcd backend", "",
               "The same workloads with `--store=etcd://...` on a 3-member etcd 3.4 cluster on this "
               "machine (`tests/etcd_cluster.sh`: each member fsyncs its own log on the same disk), "
               "against the embedded RocksDB above. Ours/theirs below is etcd/RocksDB.", ""]
        md += table("W1 on etcd: RecordFailure on distinct tasks", "coordinator on etcd",
                    etcd_w1, [("coordinator on RocksDB", w1),
                              ("raw etcd Put of one key per call (coord_bench --workload=etcd_put)",
                               res.series("etcd_put", system="etcd_raw"))],
                    "The raw peer is what a client of the same cluster gets from one Put per "
                    "call, with no coordinator: over 1x, the coordinator's batches of commits "
                    "beat the cluster's own per-request cost.")
        per_call = [f"{c} streams: {etcd_w1[c]['etcd_requests_per_call']:.2f}"
                    for c in CONCURRENCIES
                    if etcd_w1.get(c) and "etcd_requests_per_call" in etcd_w1[c]]
        if per_call:
            md += ["etcd requests per W1 call (the members' own KV requests over the window, "
                   "`coord_bench --etcd_metrics`): " + ", ".join(per_call) + ".", ""]
        md += table("W2 on etcd: IncrementAttempt on one task", "coordinator on etcd",
                    res.series("attempt", system="coordinator_etcd"),
                    [("coordinator on RocksDB", w2)],
                    "One hot key: etcd transactions are optimistic, so contenders that lose run "
                    "again (one at a time per replica).")
        md += table("W5 on etcd: SendMessage through the gateway", "coordinator on etcd",
                    res.series("a2a", system="coordinator_etcd", label="gateway"),
                    [("coordinator on RocksDB", res.series("a2a", system="coordinator",
                                                           label="gateway"))])

    md += ["## Resources", ""]
    if disk:
        md.append(f"- {disk['contexts']:,} contexts written offline with the coordinator's own "
                  "store code (`bench_bulk_load`, WAL sync skipped while loading, closed cleanly)"
                  + (f" at {big_load['rate']:,.0f} contexts/s" if big_load else ""))
        md.append(f"- on disk: {disk['bytes'] / 1e6:,.1f} MB, **{disk['bytes'] / disk['contexts']:.0f}"
                  " bytes per context** (header, agent index entry and time index entry, "
                  "uncompressed, before any "
                  "further compaction)")
    if serving:
        md.append(f"- from process start to a SERVING health check with that data: "
                  f"**{serving['serving_ms']:.0f} ms**")
    if rss:
        get_big = res.find("get_big")
        md.append(f"- peak RSS (VmHWM) after {('%.0f' % get_big['throughput']) + ' random GetContext/s for ' + str(machine.get('seconds', '?')) + ' s' if get_big else 'random reads'}"
                  f" over all of them: **{rss['hwm_kb'] / 1024:.0f} MB** (RSS at the end "
                  f"{rss['rss_kb'] / 1024:.0f} MB)")
    md.append("")

    analysis = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    md += ["## Misses and profiles", ""]
    if os.path.exists(analysis):
        with open(analysis) as f:
            md.append(f.read().rstrip())
    else:
        md.append("(no analysis written)")
    md += ["", "## Plot", "", "![throughput against concurrency](throughput.png)", ""]
    with open(os.path.join(out_dir, "RESULTS.md"), "w") as f:
        f.write("\n".join(md))

    # Plot -----------------------------------------------------------------------------------
    series = [("W1 RecordFailure", w1), ("W2 IncrementAttempt (1 task)", w2),
              ("W3 AppendMessage", w3), ("W4 GetContext", w4),
              ("W5 SendMessage via gateway", w5), ("W5 SendMessage via gateway, JSON-RPC", w5_rpc),
              ("W5 echo_agent direct", direct),
              ("JS SDK gRPC server", js), ("JS SDK gRPC server on PostgreSQL", js_pg),
              ("JS SDK JSON-RPC server", js_rpc), ("Redis INCR", redis["incr"]),
              ("Redis RPUSH", redis["rpush"]), ("Redis HSET", redis["hset"]),
              ("shell+jq, 50 tasks", jq[50]), ("Python JSON, 50 tasks", py[50])]
    dat = os.path.join(out_dir, "throughput.dat")
    with open(dat, "w") as f:
        f.write("# concurrency " + " ".join(f'"{name}"' for name, _ in series) + "\n")
        for c in CONCURRENCIES:
            f.write(f"{c} " + " ".join(
                f"{s[c]['throughput']:.1f}" if s.get(c) and s[c]["throughput"] > 0 else "NaN"
                for _, s in series) + "\n")
    plot = [
        "set terminal pngcairo size 1100,700 font ',10' noenhanced",
        f"set output '{os.path.join(out_dir, 'throughput.png')}'",
        "set title 'Throughput against concurrency (same machine, same run)'",
        "set xlabel 'concurrent streams / clients / writers'",
        "set ylabel 'calls per second (log scale)'",
        "set logscale xy", "set xtics (1, 16, 64)", "set xrange [0.8:80]",
        "set key outside right", "set grid",
    ]
    parts = []
    for i, (name, _) in enumerate(series):
        style = "lw 2" if i < 6 else "dt 2 lw 1.5"
        parts.append(f"'{dat}' using 1:{i + 2} with linespoints {style} title '{name}'")
    plot.append("plot " + ", \\\n     ".join(parts))
    gp = os.path.join(out_dir, "throughput.gp")
    with open(gp, "w") as f:
        f.write("\n".join(plot) + "\n")
    subprocess.run(["gnuplot", gp], check=True)
    os.remove(gp)
    os.remove(dat)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "redis-csv":
        redis_csv(int(sys.argv[2]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "latencies":
        latencies(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
                  sys.argv[6:])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "render":
        render(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
