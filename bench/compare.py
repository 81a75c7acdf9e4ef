#!/usr/bin/env python3
"""Side-by-side benchmark: the official Java NameServer 5.5.0 against ours, on this machine.

    cargo build --release --workspace        # builds target/release/rmq-namesrv and rmq-bench
    python3 bench/compare.py [--quick]       # ~3.5 min (full) or ~1.5 min (--quick)
    python3 bench/compare.py --tls [--quick] # plus the route workloads over TLS (+1.5 min, --quick +40 s)

The servers run ONE AFTER THE OTHER on the same 127.0.0.1 port, Java first (its closed-loop
throughput sets the offered load of the open-loop run for both). Per server:

  routes   closed loop: GET_ROUTEINFO_BY_TOPIC from 64 connections, 16 pipelined each
  routes   open loop at --open-fraction (50%) of Java's closed-loop throughput, same for both
  storm    100 brokers x 10,000 topics re-registering every 3 s, route queries at a fixed rate,
           compared with an idle phase before (fresh server instance)
  startup  spawn -> first accepted connection, idle RSS 2 s later (fresh instance)

With --tls, right after its plaintext routes each server runs again as a fresh instance with TLS
enforced and its test-mode self-signed certificate (Java: -Dtls.server.mode=enforcing
-Dtls.test.mode.enable=true; ours: [tls] mode = "enforcing", test_mode = true; neither reads a
tls.config.file), and the same two routes workloads run with `rmq-bench --tls` (every connection
TLS, Java's client semantics). The TLS open loop offers --open-fraction of Java's TLS closed-loop
throughput to both. A second table prints the TLS figures next to the plaintext ones.

The Java NameServer runs with the JVM options of its mqnamesrv/runserver.sh for Java >= 9 (4 GiB
heap, G1) and its jars from interop/.cache (interop/setup.sh fetches them); ours with
`--log-level warn`. Everything runs inside a loopback-only network namespace like the interop
suite (the Java NameServer dials the host's address by itself); `--netns off` skips it, for
`--servers ours` only.

Prints each workload's summary as it goes, then a table (Java, ours, ours/Java) with the targets
of the issue, then one line `BENCH_RESULT {json}`. Every process started is stopped by its PID;
every wait is bounded. Python standard library only; nothing is built here.

    python3 bench/compare.py --shapes [--quick]   # ~12-16 min (--quick ~4.5 min); replaces the run above

--shapes measures route queries only, as ratios to a ceiling measured in the same run: for each
route size (--route-sizes 1,4,10 broker groups) it starts `rmq-bench reference-server` (answers any
request with one pre-encoded route reply of that size, one worker per CPU like ours), ours and
Java at once, each on its own 127.0.0.1 port, and has `rmq-bench brokers` register the broker
groups x --route-topics topics on ours and Java and hold them for the whole size. Warm-up: one
window (--warm-window of the --warm-shape 4x8) for the reference and ours; for Java windows are
repeated until two in a row agree within --warm-tolerance (5 %) and --warm-min (30 s) have passed,
at most --warm-max; the first window is reported as cold, the last as warm. Then, --rounds times,
for each shape of --shape-list (connections x requests in flight: 1x1,4x8,64x4,64x16), reference,
ours and Java run in turn (`routes --preregistered`, --shape-warmup + --shape-duration each).
Reported per size, shape and server: throughput, p50/p99/p99.9, server and generator CPU per
request (µs), and the ratios ours/reference, Java/reference and ours/Java (medians of per-round
ratios), then the MET/MISSED lines of the issue's targets and `BENCH_RESULT {json}`.

    python3 bench/compare.py --connections [N] [--quick]   # ~2 min (--quick ~1 min); replaces the run above

--connections holds N concurrent connections (default 10,000; --quick 2,000) on a fresh instance
of each server, Java first, each on its own 127.0.0.1 port (`rmq-bench conns`): 2 broker groups x
100 topics registered, the server's RSS read, N connections opened (128 in flight), each sending
one route query as soon as it is open (a client connects to send a request; --silent-connections:
nothing), left idle for --idle-settle, RSS again: bytes per idle connection = RSS growth /
connections open. Then every connection polls the route of one topic once per --poll-period (5 s;
--quick 2 s): a client's 30 s poll interval (pollNameServerInterval) compressed 6x (15x), so
10,000 connections offer 2,000 req/s; the first --poll-warmup (10 s; --quick 4 s) is reported
apart, the route latency p50/p99/max of the --poll-duration after it and the RSS sampled
throughout are compared. Failed connects,
connections the server closed while idle and failed polls are counted and shown, never hidden.
The soft RLIMIT_NOFILE of this script (inherited by the servers and rmq-bench) is raised to its
hard limit; N connections need N descriptors in the server and N in rmq-bench. RSS does not
include kernel socket buffers. Prints a table (Java, ours, ours/Java), the target (under 2 KiB
per idle connection) and `BENCH_RESULT {json}`.
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "interop"))
import run as interop  # noqa: E402  (the interop suite's helpers: jars, ports, processes, netns)

OUR_BINARY = REPO / "target" / "release" / "rmq-namesrv"
BENCH_BINARY = REPO / "target" / "release" / "rmq-bench"

# distribution/bin/runserver.sh of RocketMQ 5.x, the branch for Java >= 9 (mqnamesrv calls it),
# GC log included as the script writes it.
JAVA_NAMESRV_OPTS = [
    "-server", "-Xms4g", "-Xmx4g", "-XX:MetaspaceSize=128m", "-XX:MaxMetaspaceSize=320m",
    "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
    "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
    "-XX:-OmitStackTraceInFastThrow", "-XX:-UseLargePages",
]

FULL = {
    "routes_warmup": "5s", "routes_duration": "15s", "route_connections": 64, "pipeline": 16,
    "route_brokers": 10, "route_topics": 1000,
    "storm_brokers": 100, "storm_topics": 10000, "storm_period": "3s", "storm_rate": 1000,
    "storm_warmup": "3s", "storm_idle": "10s", "storm_duration": "30s",
}
QUICK = {
    "routes_warmup": "2s", "routes_duration": "5s", "route_connections": 64, "pipeline": 16,
    "route_brokers": 10, "route_topics": 1000,
    "storm_brokers": 20, "storm_topics": 2000, "storm_period": "2s", "storm_rate": 500,
    "storm_warmup": "1s", "storm_idle": "5s", "storm_duration": "10s",
}


def load():
    one, five, _ = os.getloadavg()
    return round(one, 2), round(five, 2)


def busy_cpu_s():
    """CPU seconds spent by the whole machine (all processes, kernel included), /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    busy = fields[0] + fields[1] + fields[2] + sum(fields[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid):
    """utime + stime of a live process (all threads), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(text):
    """'15s' / '500ms' / '2m' -> seconds (the humantime forms used here)."""
    text = text.strip()
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * factor
    raise SystemExit(f"compare.py: cannot read duration {text!r} (use e.g. 500ms, 15s, 2m)")


class Bench:
    """Runs rmq-bench workloads and the servers, remembering every process by PID."""

    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.binary = (REPO / args.binary).resolve()
        self.ctx = interop.Ctx("bench", work / "procs", "ours", 0, self.binary)
        self.port = interop.free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.nice = ["nice", "-n", str(args.nice)] if args.nice else []

    # -- servers -------------------------------------------------------------------------------

    def server_argv(self, kind, home, tls=False, port=None, brokers=None):
        """(argv, env) starting `kind` on port (default self.port) with its state under home; with
        tls, TLS enforced with the server's test-mode self-signed certificate. `reference` is
        `rmq-bench reference-server` answering a route of `brokers` broker groups."""
        port = port or self.port
        addr = f"127.0.0.1:{port}"
        if kind == "reference":
            workers = self.args.ref_workers or os.cpu_count() or 1
            return [str(BENCH_BINARY), "reference-server", "--listen", addr, "--workers", str(workers),
                    "--brokers", str(brokers), "--queues", "8"], {}
        # A tls.config.file that does not exist: no /etc/rocketmq/tls.properties can change the run.
        no_tls_file = home / "no-such-tls.properties"
        if kind == "java":
            conf = home / "namesrv.properties"
            interop.write_properties(conf, {
                "listenPort": port,
                "bindAddress": "127.0.0.1",
                "kvConfigPath": home / "kvConfig.json",
                "rocketmqHome": home,
            })
            gc_log = f"-Xlog:gc*:file={home / 'rmq_srv_gc.log'}:time,tags:filecount=5,filesize=30M"
            tls_opts = ["-Dtls.server.mode=enforcing", "-Dtls.test.mode.enable=true",
                        f"-Dtls.config.file={no_tls_file}"] if tls else []
            argv = [interop.java_bin(), *JAVA_NAMESRV_OPTS, gc_log, f"-Duser.home={home}", *tls_opts,
                    "-cp", interop.server_classpath("5", "namesrv"),
                    "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(conf)]
            return argv, {"ROCKETMQ_HOME": str(home)}
        argv = [str(self.binary), "--listen", addr,
                "--kv-config-path", str(home / "kvConfig.json"),
                "--config-store-path", str(home / "namesrv.properties"),
                "--log-level", "warn"]
        if tls:
            conf = home / "tls.toml"
            conf.write_text(f'[tls]\nmode = "enforcing"\ntest_mode = true\nconfig_file = "{no_tls_file}"\n')
            argv += ["--config", str(conf)]
        return argv, {}

    def port_free(self, addr=None):
        addr = addr or self.addr
        ok = interop.wait_until(f"{addr} to be free", 30, 0.2, lambda: not interop.port_open(addr))
        return ok

    def start(self, kind, label, tls=False, port=None, brokers=None):
        addr = f"127.0.0.1:{port}" if port else self.addr
        self.port_free(addr)
        home = self.ctx.home(label)
        argv, env = self.server_argv(kind, home, tls, port=port, brokers=brokers)
        proc = self.ctx.spawn(label, self.nice + argv, home, env=env)
        proc.addr = addr
        self.ctx.logs.append((f"{label} stderr", proc.stderr))
        if kind == "reference":
            self.ctx.logs.append((f"{label} stdout", proc.stdout))

        def ready():
            if not proc.alive():
                raise interop.Fail(f"{label} exited with {proc.popen.returncode} during start-up", self.ctx.logs)
            # The reference server prints one line when it listens.
            if kind == "reference" and "listening on" not in interop.read_text(proc.stdout):
                return False
            return interop.port_open(addr)

        interop.wait_until(f"{label} to accept on {addr}", 120, 0.05, ready)
        return proc

    def stop(self, proc):
        took = self.ctx.stop(proc, signal.SIGTERM, timeout=30)
        self.ctx.procs.remove(proc)
        return took

    # -- rmq-bench -----------------------------------------------------------------------------

    def bench(self, label, argv, timeout, env=None, cwd=None, server_pid=None, addr=None, quiet=False):
        """Runs rmq-bench with argv, echoing its output indented (unless quiet); returns its final
        JSON line with `other_cores`: machine CPU (/proc/stat) not charged to the server or the
        generator, i.e. other users of the machine (or kernel work charged to no process), averaged
        over the run."""
        full = [*self.nice, str(BENCH_BINARY), "--addr", addr or self.addr, "--threads", str(self.args.threads),
                *argv]
        log = self.work / f"{label}.log"
        (self.work / f"{label}.argv").write_text(" ".join(full) + "\n")
        if not quiet:
            print(f"# {label}: load {load()} (1, 5 min)", flush=True)
        run_env = {k: v for k, v in os.environ.items() if k not in ("ROCKETMQ_HOME", "NAMESRV_ADDR")}
        run_env.update(env or {})
        t0, busy0, kids0 = time.monotonic(), busy_cpu_s(), children_cpu_s()
        server0 = process_cpu_s(server_pid) if server_pid else 0.0
        popen = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=run_env,
                                 cwd=cwd or self.work, preexec_fn=interop._child_setup)
        timer = threading.Timer(timeout, popen.kill)
        timer.start()
        last = None
        try:
            with open(log, "w") as sink:
                for raw in popen.stdout:
                    line = raw.decode(errors="replace").rstrip("\n")
                    sink.write(line + "\n")
                    if line.startswith("{"):
                        last = line
                    elif not quiet:
                        print(f"    {line}", flush=True)
            popen.wait(timeout=30)
        finally:
            timer.cancel()
            if popen.poll() is None:
                popen.kill()
                popen.wait(timeout=10)
        if popen.returncode != 0 or last is None:
            raise interop.Fail(f"rmq-bench {label} failed (exit {popen.returncode}): {last}",
                               [(label, log)] + self.ctx.logs)
        wall = max(time.monotonic() - t0, 1e-3)
        server = (process_cpu_s(server_pid) - server0) if server_pid else 0.0
        other = busy_cpu_s() - busy0 - (children_cpu_s() - kids0) - server
        result = json.loads(last)
        result["load_after"] = load()
        result["other_cores"] = round(max(other, 0.0) / wall, 2)
        if not quiet:
            print(f"# {label}: {wall:.0f} s; CPU not charged to the server or the generator (other processes): "
                  f"{result['other_cores']:.2f} cores", flush=True)
        return result

    def routes(self, label, pid, rate=None, tls=False):
        a = self.args
        argv = ["--pid", str(pid), *(["--tls"] if tls else []),
                "routes", "--brokers", str(a.route_brokers), "--topics", str(a.route_topics),
                "--connections", str(a.route_connections), "--pipeline", str(a.pipeline),
                "--warmup", a.routes_warmup, "--duration", a.routes_duration]
        if rate:
            argv += ["--rate", str(int(rate))]
        budget = seconds(a.routes_warmup) + seconds(a.routes_duration) + 120
        return self.bench(label, argv, budget, server_pid=pid)

    def storm(self, label, pid):
        a = self.args
        argv = ["--pid", str(pid), "--timeout", "60s", "storm", "--brokers", str(a.storm_brokers),
                "--topics", str(a.storm_topics), "--period", a.storm_period, "--query-rate", str(a.storm_rate),
                "--warmup", a.storm_warmup, "--idle", a.storm_idle, "--duration", a.storm_duration]
        budget = seconds(a.storm_warmup) + seconds(a.storm_idle) + seconds(a.storm_duration) + 600
        return self.bench(label, argv, budget, server_pid=pid)

    def startup(self, kind, label):
        self.port_free()
        home = self.ctx.home(label)
        argv, env = self.server_argv(kind, home)
        return self.bench(label, ["startup", "--log", str(home / "server.log"), "--", *self.nice, *argv],
                          240, env=env, cwd=home)

    def conns(self, label, proc, count):
        """`rmq-bench conns`: `count` connections held idle, then polling routes, against proc."""
        a = self.args
        argv = ["--pid", str(proc.pid), "conns", "--connections", str(count),
                "--open-timeout", f"{CONNS_OPEN_TIMEOUT_S}s", "--settle", a.idle_settle,
                "--poll-period", a.poll_period, "--warmup", a.poll_warmup, "--duration", a.poll_duration,
                *(["--silent"] if a.silent_connections else [])]
        budget = (CONNS_OPEN_TIMEOUT_S + seconds(a.idle_settle) + seconds(a.poll_warmup)
                  + seconds(a.poll_duration) + 180)
        return self.bench(label, argv, budget, server_pid=proc.pid, addr=proc.addr)

    # -- one server ----------------------------------------------------------------------------

    def suite(self, kind, open_rate, tls_open_rate):
        """Every workload against `kind`; an open rate None = take it from this server's
        closed-loop run (plaintext and TLS apart)."""
        out = {}
        proc = self.start(kind, f"{kind}-routes")
        try:
            out["routes_closed"] = self.routes(f"{kind}-routes-closed", proc.pid)
            if open_rate is None:
                open_rate = max(1, round(out["routes_closed"]["throughput_rps"] * self.args.open_fraction))
            out["routes_open"] = self.routes(f"{kind}-routes-open", proc.pid, rate=open_rate)
        finally:
            self.stop(proc)
        if self.args.tls:
            proc = self.start(kind, f"{kind}-tls-routes", tls=True)
            try:
                out["tls_routes_closed"] = self.routes(f"{kind}-tls-routes-closed", proc.pid, tls=True)
                if tls_open_rate is None:
                    tls_open_rate = max(1, round(out["tls_routes_closed"]["throughput_rps"]
                                                 * self.args.open_fraction))
                out["tls_routes_open"] = self.routes(f"{kind}-tls-routes-open", proc.pid, rate=tls_open_rate,
                                                     tls=True)
            finally:
                self.stop(proc)
        proc = self.start(kind, f"{kind}-storm")
        try:
            out["storm"] = self.storm(f"{kind}-storm", proc.pid)
        finally:
            self.stop(proc)
        out["startup"] = self.startup(kind, f"{kind}-startup")
        return out, open_rate, tls_open_rate


# ---------------------------------------------------------------------------------------------
# report

def dig(d, *path):
    for key in path:
        if not isinstance(d, dict) or d.get(key) is None:
            return None
        d = d[key]
    return d


ROWS = [
    # (label, unit, path, scale) — scale divides the raw value for display
    ("routes closed: throughput", "req/s", ("routes_closed", "throughput_rps"), 1),
    ("routes closed: p50", "µs", ("routes_closed", "latency_us", "p50"), 1),
    ("routes closed: p99", "µs", ("routes_closed", "latency_us", "p99"), 1),
    ("routes closed: p99.9", "µs", ("routes_closed", "latency_us", "p999"), 1),
    ("routes closed: max", "µs", ("routes_closed", "latency_us", "max"), 1),
    ("routes closed: server CPU", "cores", ("routes_closed", "cpu", "server_cores"), 1),
    ("routes closed: server RSS", "MiB", ("routes_closed", "server", "rss_kib"), 1024),
    ("routes closed: CPU not charged to us", "cores", ("routes_closed", "other_cores"), 1),
    ("routes open: offered", "req/s", ("routes_open", "rate"), 1),
    ("routes open: answered", "req/s", ("routes_open", "throughput_rps"), 1),
    ("routes open: p50", "µs", ("routes_open", "latency_us", "p50"), 1),
    ("routes open: p99", "µs", ("routes_open", "latency_us", "p99"), 1),
    ("routes open: p99.9", "µs", ("routes_open", "latency_us", "p999"), 1),
    ("routes open: max", "µs", ("routes_open", "latency_us", "max"), 1),
    ("routes open: server CPU", "cores", ("routes_open", "cpu", "server_cores"), 1),
    ("routes open: pacer lag p99", "µs", ("routes_open", "open_loop", "pacer_lag_us", "p99"), 1),
    ("routes open: CPU not charged to us", "cores", ("routes_open", "other_cores"), 1),
    ("storm: initial registrations", "s", ("storm", "setup_s"), 1),
    ("storm: route p50 idle", "µs", ("storm", "route_idle", "latency_us", "p50"), 1),
    ("storm: route p99 idle", "µs", ("storm", "route_idle", "latency_us", "p99"), 1),
    ("storm: route p50 storm", "µs", ("storm", "route_storm", "latency_us", "p50"), 1),
    ("storm: route p99 storm", "µs", ("storm", "route_storm", "latency_us", "p99"), 1),
    ("storm: route max storm", "µs", ("storm", "route_storm", "latency_us", "max"), 1),
    ("storm: route p99 storm/idle", "x", ("storm", "route_p99_storm_over_idle"), 1),
    ("storm: registration p50", "ms", ("storm", "registrations", "latency_us", "p50"), 1000),
    ("storm: registration p99", "ms", ("storm", "registrations", "latency_us", "p99"), 1000),
    ("storm: registration max", "ms", ("storm", "registrations", "latency_us", "max"), 1000),
    ("storm: registrations", "/s", ("storm", "registrations", "throughput_per_s"), 1),
    ("storm: registrations failed", "", ("storm", "registrations", "failed"), 1),
    ("storm: server CPU in storm", "cores", ("storm", "cpu_storm", "server_cores"), 1),
    ("storm: server RSS at end", "MiB", ("storm", "server", "rss_kib"), 1024),
    ("storm: server RSS peak (VmHWM)", "MiB", ("storm", "server", "hwm_kib"), 1024),
    ("storm: CPU not charged to us", "cores", ("storm", "other_cores"), 1),
    ("startup: spawn to accepting", "ms", ("startup", "ready_ms"), 1),
    ("startup: idle RSS after 2 s", "MiB", ("startup", "idle_rss_kib"), 1024),
]


# (label, unit, path inside routes_closed / routes_open, scale): the TLS table shows each next to
# the same figure in plaintext.
TLS_ROWS = [
    ("routes closed: throughput", "req/s", ("routes_closed", "throughput_rps"), 1),
    ("routes closed: p50", "µs", ("routes_closed", "latency_us", "p50"), 1),
    ("routes closed: p99", "µs", ("routes_closed", "latency_us", "p99"), 1),
    ("routes closed: p99.9", "µs", ("routes_closed", "latency_us", "p999"), 1),
    ("routes closed: server CPU", "cores", ("routes_closed", "cpu", "server_cores"), 1),
    ("routes closed: generator CPU", "cores", ("routes_closed", "cpu", "bench_cores"), 1),
    ("routes closed: server RSS", "MiB", ("routes_closed", "server", "rss_kib"), 1024),
    ("routes closed: CPU not charged to us", "cores", ("routes_closed", "other_cores"), 1),
    ("routes open: offered", "req/s", ("routes_open", "rate"), 1),
    ("routes open: answered", "req/s", ("routes_open", "throughput_rps"), 1),
    ("routes open: p50", "µs", ("routes_open", "latency_us", "p50"), 1),
    ("routes open: p99", "µs", ("routes_open", "latency_us", "p99"), 1),
    ("routes open: p99.9", "µs", ("routes_open", "latency_us", "p999"), 1),
    ("routes open: server CPU", "cores", ("routes_open", "cpu", "server_cores"), 1),
    ("routes open: generator CPU", "cores", ("routes_open", "cpu", "bench_cores"), 1),
    ("routes open: pacer lag p99", "µs", ("routes_open", "open_loop", "pacer_lag_us", "p99"), 1),
    ("routes open: CPU not charged to us", "cores", ("routes_open", "other_cores"), 1),
]


def fmt(value, scale):
    if value is None:
        return "-"
    v = value / scale
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ratio(ours, java):
    if ours is None or not java:
        return None
    return ours / java


def targets(results):
    java, ours = results.get("java", {}), results.get("ours", {})

    def val(r, *path):
        return dig(r, *path)

    rows = []
    t = ratio(val(ours, "routes_closed", "throughput_rps"), val(java, "routes_closed", "throughput_rps"))
    rows.append(("route-query throughput >= 3x Java (closed loop)", t, t is not None and t >= 3, "x"))
    t = ratio(val(ours, "routes_open", "latency_us", "p99"), val(java, "routes_open", "latency_us", "p99"))
    rows.append(("p99 <= 1/3 of Java's at the same offered load (open loop)", t,
                 t is not None and t <= 1 / 3, "x"))
    t = val(ours, "storm", "route_p99_storm_over_idle")
    rows.append(("route p99 during the storm <= 2x its idle value (ours)", t, t is not None and t <= 2, "x"))
    t = ratio(val(ours, "storm", "server", "hwm_kib"), val(java, "storm", "server", "hwm_kib"))
    rows.append(("RSS at storm scale (peak) <= 1/4 of Java's", t, t is not None and t <= 0.25, "x"))
    t = val(ours, "startup", "ready_ms")
    rows.append(("start-up to listening < 50 ms (ours)", t, t is not None and t < 50, "ms"))
    return rows


def report(results, meta):
    width = max(len(r[0]) + len(r[1]) + 3 for r in ROWS)
    print()
    print(f"{'':{width}}  {'Java 5.5.0':>12}  {'ours':>12}  {'ours/Java':>9}")
    for label, unit, path, scale in ROWS:
        j, o = dig(results.get("java"), *path), dig(results.get("ours"), *path)
        r = ratio(o, j)
        name = f"{label} ({unit})" if unit else label
        print(f"{name:{width}}  {fmt(j, scale):>12}  {fmt(o, scale):>12}  {'-' if r is None else f'{r:.3f}':>9}")
    print()
    print("targets of the issue (measured here, not promises):")
    verdicts = []
    for name, value, met, unit in targets(results):
        shown = "-" if value is None else (f"{value:.3f}{unit}" if unit == "x" else f"{value:.1f} {unit}")
        print(f"  {'MET ' if met else 'MISS'} {name}: {shown}")
        verdicts.append({"target": name, "value": value, "met": bool(met)})
    print(f"# load average before {meta['load_before']}, after {meta['load_after']}; "
          f"{meta['cpus']} CPUs; mode {meta['mode']}")
    return verdicts


def report_tls(results):
    """The TLS figures next to the plaintext ones: Java TLS, ours TLS, ours/Java over TLS, and each
    server's TLS / plaintext."""
    if not any(dig(results.get(k), "tls_routes_closed") for k in ("java", "ours")):
        return
    width = max(len(r[0]) + len(r[1]) + 3 for r in TLS_ROWS)
    print()
    print("TLS (enforcing, each server's test-mode self-signed certificate; connections opened before measuring):")
    for kind, name in (("java", "Java 5.5.0"), ("ours", "ours")):
        tls = dig(results.get(kind), "tls_routes_closed", "tls")
        if tls:
            print(f"  {name}: {tls.get('protocol')} {tls.get('cipher_suite')}")
    print(f"{'':{width}}  {'Java TLS':>10}  {'ours TLS':>10}  {'ours/Java':>9}  {'Java TLS/plain':>14}  "
          f"{'ours TLS/plain':>14}")

    def r3(value):
        return "-" if value is None else f"{value:.3f}"

    for label, unit, path, scale in TLS_ROWS:
        tls_path = ("tls_" + path[0], *path[1:])
        j, o = dig(results.get("java"), *tls_path), dig(results.get("ours"), *tls_path)
        jp, op = dig(results.get("java"), *path), dig(results.get("ours"), *path)
        name = f"{label} ({unit})" if unit else label
        print(f"{name:{width}}  {fmt(j, scale):>10}  {fmt(o, scale):>10}  {r3(ratio(o, j)):>9}  "
              f"{r3(ratio(j, jp)):>14}  {r3(ratio(o, op)):>14}")
    print("  (TLS/plain of the open loop compares different offered loads when the two rows 'offered' differ)")


# ---------------------------------------------------------------------------------------------
# --connections: many connections held idle, then polling routes

CONNS_FULL = {"poll_period": "5s", "poll_warmup": "10s", "poll_duration": "20s", "idle_settle": "3s"}
CONNS_QUICK = {"poll_period": "2s", "poll_warmup": "4s", "poll_duration": "6s", "idle_settle": "2s"}
CONNS_COUNT = {"full": 10_000, "quick": 2_000}
# No connect is started after this (both servers close a connection idle for 120 s).
CONNS_OPEN_TIMEOUT_S = 60
# The target of the issue: RSS per idle connection (ours).
CONNS_TARGET_BYTES = 2048

CONNS_ROWS = [
    # (label, unit, path, scale)
    ("connections opened", "", ("connections", "opened"), 1),
    ("connections failed (connect or first request)", "", ("connections", "failed"), 1),
    ("connects not attempted (--open-timeout)", "", ("connections", "not_attempted"), 1),
    ("time to open them all", "s", ("connections", "open_s"), 1),
    ("connect p99", "µs", ("connections", "connect_latency_us", "p99"), 1),
    ("first request p50", "µs", ("connections", "first_request_latency_us", "p50"), 1),
    ("first request p99", "µs", ("connections", "first_request_latency_us", "p99"), 1),
    ("server RSS base", "MiB", ("server", "before", "rss_kib"), 1024),
    ("server RSS with the connections idle", "MiB", ("server", "idle", "rss_kib"), 1024),
    ("RSS per idle connection", "B", ("bytes_per_idle_connection",), 1),
    ("RSS per idle connection", "KiB", ("bytes_per_idle_connection",), 1024),
    ("closed by the server while idle", "", ("connections", "closed_by_server_while_idle"), 1),
    ("server CPU idle", "cores", ("cpu_idle", "server_cores"), 1),
    ("polling: offered", "req/s", ("poll", "offered_rps"), 1),
    ("polling: answered (measured window)", "req/s", ("poll", "throughput_rps"), 1),
    ("polling: route p50 warm-up", "µs", ("poll", "warmup_latency_us", "p50"), 1),
    ("polling: route p99 warm-up", "µs", ("poll", "warmup_latency_us", "p99"), 1),
    ("polling: route p50", "µs", ("poll", "latency_us", "p50"), 1),
    ("polling: route p99", "µs", ("poll", "latency_us", "p99"), 1),
    ("polling: route p99.9", "µs", ("poll", "latency_us", "p999"), 1),
    ("polling: route max", "µs", ("poll", "latency_us", "max"), 1),
    ("polling: generator lag p99 (due to written)", "µs", ("poll", "lag_us", "p99"), 1),
    ("polling: generator lag p99 in the warm-up", "µs", ("poll", "warmup_lag_us", "p99"), 1),
    ("polling: polls sent", "", ("poll", "sent"), 1),
    ("polling: polls failed", "", ("poll", "errors"), 1),
    ("polling: polls skipped (connection failed)", "", ("poll", "skipped"), 1),
    ("polling: server RSS max", "MiB", ("server", "polling_max_rss_kib"), 1024),
    ("polling: RSS per connection (max - base)", "B", ("bytes_per_polling_connection",), 1),
    ("polling: server CPU", "cores", ("poll", "cpu", "server_cores"), 1),
    ("server RSS after closing them", "MiB", ("server", "after_close", "rss_kib"), 1024),
    ("generator RSS per connection", "B", ("generator", "bytes_per_connection"), 1),
    ("CPU not charged to us", "cores", ("other_cores",), 1),
]


def conns_errors(r):
    """Failed connects + connections the server closed while idle + failed polls (None: no run)."""
    if not r:
        return None
    return sum(dig(r, *path) or 0 for path in (("connections", "failed"), ("connections", "not_attempted"),
                                               ("connections", "closed_by_server_while_idle"), ("poll", "errors")))


def raise_fd_limit(count):
    """Raises this process's soft RLIMIT_NOFILE to its hard limit (the servers and rmq-bench inherit
    it); warns when `count` connections cannot fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            with open("/proc/sys/fs/nr_open") as f:
                nr_open = int(f.read())
        except (OSError, ValueError):
            nr_open = 1 << 20
        target = nr_open if hard == resource.RLIM_INFINITY else min(hard, nr_open)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as e:
            print(f"# cannot raise RLIMIT_NOFILE to {target}: {e}", flush=True)
    if soft != resource.RLIM_INFINITY and soft < count + 100:
        print(f"# WARNING: RLIMIT_NOFILE is {soft}: {count} connections need {count + 100} descriptors in the server "
              f"and in rmq-bench; connects beyond the limit will fail (counted)", flush=True)
    return soft, hard


CONNS_ERRORS_LABEL = "errors (connections failed + not attempted + closed idle + polls)"


def report_conns(results, meta, count):
    width = max(max(len(r[0]) + len(r[1]) + 3 for r in CONNS_ROWS), len(CONNS_ERRORS_LABEL))
    c = meta["conns"]
    print()
    print(f"{count:,} connections held ({'silent' if c['silent'] else 'one route query each on opening'}, idle "
          f"{c['idle_settle']}), then each polling one route every "
          f"{c['poll_period']} (a client's 30 s compressed {30 / seconds(c['poll_period']):.0f}x), "
          f"{c['poll_warmup']} warm-up + {c['poll_duration']} measured; fresh server instance each; "
          f"RLIMIT_NOFILE {c['fd_soft']} (soft) / {c['fd_hard']} (hard)")
    print(f"{'':{width}}  {'Java 5.5.0':>12}  {'ours':>12}  {'ours/Java':>9}")
    def show(value, scale):
        return fint(value) if isinstance(value, int) and scale == 1 else fmt(value, scale)

    for label, unit, path, scale in CONNS_ROWS:
        j, o = dig(results.get("java"), *path), dig(results.get("ours"), *path)
        r = ratio(o, j)
        name = f"{label} ({unit})" if unit else label
        print(f"{name:{width}}  {show(j, scale):>12}  {show(o, scale):>12}  {'-' if r is None else f'{r:.3f}':>9}")
    je, oe = conns_errors(results.get("java")), conns_errors(results.get("ours"))
    print(f"{CONNS_ERRORS_LABEL:{width}}  {fint(je):>12}  {fint(oe):>12}")
    for kind in ("java", "ours"):
        r = results.get(kind)
        kinds = {**(dig(r, "connections", "failures") or {}), **(dig(r, "poll", "error_kinds") or {})}
        for what, n in kinds.items():
            print(f"  ERRORS {KIND_NAMES[kind]}: {n} x {what}")
    print()
    print("target of the issue (measured here, not a promise):")
    ours = dig(results.get("ours"), "bytes_per_idle_connection")
    java = dig(results.get("java"), "bytes_per_idle_connection")
    met = ours is not None and ours < CONNS_TARGET_BYTES and not oe
    shown = "-" if ours is None else f"{ours:,.0f} B = {ours / 1024:.2f} KiB"
    java_shown = "" if java is None else f" (Java: {java:,.0f} B = {java / 1024:.2f} KiB)"
    print(f"  {'MET ' if met else 'MISS'} RSS per idle connection < {CONNS_TARGET_BYTES / 1024:.0f} KiB at "
          f"{count:,} connections, all held: {shown}{java_shown}")
    print(f"# load average before {meta['load_before']}, after {meta['load_after']}; "
          f"{meta['cpus']} CPUs; mode {meta['mode']}")
    return [{"target": f"RSS per idle connection < {CONNS_TARGET_BYTES} B", "value": ours, "java": java,
             "met": met}]


def run_conns(args, bench, servers, meta):
    count = args.connections
    soft, hard = raise_fd_limit(count)
    settings = {k: getattr(args, k) for k in CONNS_FULL}
    meta["conns"] = {"connections": count, **settings, "silent": args.silent_connections,
                     "fd_soft": "unlimited" if soft == resource.RLIM_INFINITY else soft,
                     "fd_hard": "unlimited" if hard == resource.RLIM_INFINITY else hard}
    print(f"# rmq-bench compare --connections {count} ({meta['mode']}): servers {servers}, work dir {bench.work}",
          flush=True)
    print(f"# load average {meta['load_before']} (1, 5 min) on {meta['cpus']} CPUs", flush=True)
    results = {}
    failed = None
    started = time.monotonic()
    try:
        for kind in servers:
            t0 = time.monotonic()
            print(f"## {kind}", flush=True)
            proc = bench.start(kind, f"{kind}-conns", port=interop.free_port())
            try:
                results[kind] = bench.conns(f"{kind}-conns", proc, count)
            finally:
                bench.stop(proc)
            print(f"# {kind}: {time.monotonic() - t0:.0f} s", flush=True)
    except interop.Fail as e:
        failed = str(e)
        print(f"FAIL: {e}", flush=True)
        interop.print_logs(e.logs)
    except KeyboardInterrupt:
        failed = "interrupted"
        print("FAIL: interrupted", flush=True)
    finally:
        bench.ctx.cleanup()
    meta["load_after"] = load()
    meta["seconds"] = round(time.monotonic() - started)
    verdicts = report_conns(results, meta, count)
    print(f"# total {meta['seconds']} s", flush=True)
    if failed or args.keep:
        print(f"# work dir kept: {bench.work}", flush=True)
    else:
        shutil.rmtree(bench.work, ignore_errors=True)
    print("BENCH_RESULT " + json.dumps({"meta": meta, "conns": results, "targets": verdicts, "error": failed},
                                       separators=(",", ":")), flush=True)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# --shapes: every workload a ratio to the reference server, measured interleaved in the same run

SHAPES_FULL = {"shape_warmup": "2s", "shape_duration": "5s", "rounds": 2,
               "warm_window": "5s", "warm_min": 30.0, "warm_max": 120.0}
SHAPES_QUICK = {"shape_warmup": "1s", "shape_duration": "2s", "rounds": 1,
                "warm_window": "3s", "warm_min": 30.0, "warm_max": 60.0}
SHAPE_KINDS = ("reference", "ours", "java")
KIND_NAMES = {"reference": "reference", "ours": "ours", "java": "Java 5.5.0"}
PIPELINED_SHAPES = ("4x8", "64x4", "64x16")


def parse_shape(text):
    try:
        conns, pipeline = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"compare.py: cannot read shape {text!r} (connections x in flight, e.g. 4x8)")
    if conns < 1 or pipeline < 1:
        raise SystemExit(f"compare.py: shape {text!r} needs positive numbers")
    return conns, pipeline


def fint(value):
    """A count or a latency in µs: 1,234 (no decimals)."""
    return "-" if value is None else f"{value:,.0f}"


def brokers_text(size):
    return f"{size} broker{'' if size == 1 else 's'}"


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def shape_summary(r):
    """The figures of one closed-loop `routes` run that the shapes report uses."""
    return {
        "rps": r.get("throughput_rps"),
        "p50": dig(r, "latency_us", "p50"), "p99": dig(r, "latency_us", "p99"),
        "p999": dig(r, "latency_us", "p999"), "max": dig(r, "latency_us", "max"),
        "server_us_per_req": dig(r, "cpu_us_per_request", "server"),
        "bench_us_per_req": dig(r, "cpu_us_per_request", "bench"),
        "server_cores": dig(r, "cpu", "server_cores"), "bench_cores": dig(r, "cpu", "bench_cores"),
        "other_cores": r.get("other_cores"), "errors": r.get("errors"),
        "failed_connections": len(r.get("failed_connections") or []),
        "body_bytes": r.get("probe_body_bytes"), "load_after": r.get("load_after"),
    }


class Shapes:
    """The --shapes run: per route size, the reference server, ours and Java started once (each on
    its own port, brokers held registered by `rmq-bench brokers`), warmed, then measured
    round-robin shape by shape."""

    def __init__(self, bench, kinds):
        self.bench = bench
        self.args = bench.args
        self.kinds = kinds
        self.shapes = [s.strip() for s in self.args.shape_list.split(",") if s.strip()]
        for shape in self.shapes + [self.args.warm_shape]:
            parse_shape(shape)
        self.sizes = [int(v) for v in self.args.route_sizes.split(",") if v.strip()]
        self.runs = []      # every measurement, in order
        self.warmups = {}   # size -> kind -> warm-up record
        self.bodies = {}    # size -> kind -> route body bytes seen by the probe

    def run_routes(self, label, proc, size, shape, warmup, duration):
        conns, pipeline = parse_shape(shape)
        a = self.args
        argv = ["--pid", str(proc.pid), "routes", "--preregistered", "--brokers", str(size),
                "--topics", str(a.route_topics), "--connections", str(conns), "--pipeline", str(pipeline),
                "--warmup", warmup, "--duration", duration]
        budget = seconds(warmup) + seconds(duration) + 120
        r = self.bench.bench(label, argv, budget, server_pid=proc.pid, addr=proc.addr, quiet=True)
        log = interop.read_text(self.bench.work / f"{label}.log")
        found = re.search(r"^probe: route of the first topic is (\d+) bytes", log, re.MULTILINE)
        r["probe_body_bytes"] = int(found.group(1)) if found else None
        return shape_summary(r)

    @staticmethod
    def line(tag, kind, m):
        errors = f"  ERRORS {m['errors']}" if m["errors"] else ""
        failed = f"  FAILED CONNECTIONS {m['failed_connections']}" if m["failed_connections"] else ""
        print(f"  {tag:<24} {KIND_NAMES[kind]:<10} {fint(m['rps']):>9} req/s  p50 {fint(m['p50']):>6}  "
              f"p99 {fint(m['p99']):>6} µs  server {fmt(m['server_us_per_req'], 1):>5} µs/req "
              f"({fmt(m['server_cores'], 1)} cores)  generator {fmt(m['bench_us_per_req'], 1)} µs/req  "
              f"other {fmt(m['other_cores'], 1)} cores{errors}{failed}", flush=True)

    def hold_brokers(self, label, proc, size):
        """`rmq-bench brokers` registering `size` broker groups on proc, held until stopped."""
        home = self.bench.ctx.home(label)
        argv = [*self.bench.nice, str(BENCH_BINARY), "--addr", proc.addr, "brokers", "--brokers", str(size),
                "--topics", str(self.args.route_topics), "--queues", "8"]
        holder = self.bench.ctx.spawn(label, argv, home)
        self.bench.ctx.logs.append((f"{label} stdout", holder.stdout))
        self.bench.ctx.logs.append((f"{label} stderr", holder.stderr))

        def ready():
            if not holder.alive():
                raise interop.Fail(f"{label} exited with {holder.popen.returncode}", self.bench.ctx.logs)
            return "registered:" in interop.read_text(holder.stdout)

        interop.wait_until(f"{label} to register {size} brokers", 120, 0.1, ready)
        return holder

    def warm(self, kind, proc, size):
        """Warm-up windows of the warm-up shape. Java: repeated until two in a row agree within
        --warm-tolerance and --warm-min seconds have passed (at most --warm-max); the others: one
        window. The first window is the cold figure, the last the warm one."""
        a = self.args
        window = seconds(a.warm_window)
        windows, converged, t0 = [], False, time.monotonic()
        while True:
            n = len(windows) + 1
            m = self.run_routes(f"b{size}-{kind}-warm{n}", proc, size, a.warm_shape, "0s", a.warm_window)
            windows.append(m)
            elapsed = time.monotonic() - t0
            self.line(f"{brokers_text(size)}, warm-up {n}", kind, m)
            if kind != "java":
                break
            if len(windows) >= 2:
                x, y = windows[-2]["rps"] or 0, windows[-1]["rps"] or 0
                if abs(y - x) <= a.warm_tolerance * max(x, y, 1) and elapsed >= a.warm_min:
                    converged = True
                    break
            if elapsed + window > a.warm_max:
                break
        record = {"cold": windows[0], "warm": windows[-1], "windows_rps": [w["rps"] for w in windows],
                  "seconds": round(time.monotonic() - t0, 1), "converged": converged if kind == "java" else None}
        if kind == "java":
            print(f"  Java warm-up: {len(windows)} windows in {record['seconds']:.0f} s, "
                  f"{'converged' if converged else 'NOT converged (--warm-max reached)'}: "
                  f"{' → '.join(fint(v) for v in record['windows_rps'])} req/s", flush=True)
        return record

    def size(self, size):
        bench, a = self.bench, self.args
        procs, holders = {}, []
        print(f"## route of {brokers_text(size)}", flush=True)
        t0 = time.monotonic()
        try:
            for kind in self.kinds:
                procs[kind] = bench.start(kind, f"b{size}-{kind}", port=interop.free_port(), brokers=size)
            for kind in self.kinds:
                if kind != "reference":
                    holders.append(self.hold_brokers(f"b{size}-{kind}-brokers", procs[kind], size))
            self.warmups[size] = {kind: self.warm(kind, procs[kind], size) for kind in self.kinds}
            for rnd in range(1, a.rounds + 1):
                for shape in self.shapes:
                    for kind in self.kinds:
                        m = self.run_routes(f"b{size}-{shape}-{kind}-r{rnd}", procs[kind], size, shape,
                                            a.shape_warmup, a.shape_duration)
                        self.line(f"{brokers_text(size)}, {shape} r{rnd}", kind, m)
                        self.runs.append({"brokers": size, "shape": shape, "round": rnd, "server": kind, **m})
                        if m["body_bytes"]:
                            self.bodies.setdefault(size, {})[kind] = m["body_bytes"]
        finally:
            for proc in holders + [procs[k] for k in reversed(self.kinds) if k in procs]:
                bench.stop(proc)
        print(f"# route of {brokers_text(size)}: {time.monotonic() - t0:.0f} s", flush=True)

    # -- the figures ---------------------------------------------------------------------------

    def pick(self, size, shape, kind):
        return [r for r in self.runs if (r["brokers"], r["shape"], r["server"]) == (size, shape, kind)]

    def ratio_median(self, size, shape, num, den, key):
        """The median over rounds of num/den of `key`, each round's two runs adjacent in time."""
        by_round = {r["round"]: r for r in self.pick(size, shape, den)}
        values = [ratio(r[key], by_round[r["round"]][key]) for r in self.pick(size, shape, num)
                  if r["round"] in by_round]
        return median(values)

    def summary(self):
        out = {}
        keys = ("rps", "p50", "p99", "p999", "server_us_per_req", "bench_us_per_req", "server_cores",
                "bench_cores", "other_cores", "errors")
        for size in self.sizes:
            for shape in self.shapes:
                cell = {}
                for kind in self.kinds:
                    runs = self.pick(size, shape, kind)
                    if runs:
                        cell[kind] = {k: median([r[k] for r in runs]) for k in keys}
                ratios = {}
                for num, den in (("ours", "reference"), ("java", "reference"), ("ours", "java")):
                    if num in cell and den in cell:
                        for key in ("rps", "p99", "server_us_per_req"):
                            ratios[f"{num}/{den} {key}"] = self.ratio_median(size, shape, num, den, key)
                cell["ratios"] = ratios
                out[f"{size}/{shape}"] = cell
        return out

    def targets(self, summary):
        rows = []

        def row(name, key, shape, ok):
            values = [dig(summary, f"{size}/{shape}", "ratios", key) for size in self.sizes]
            if shape not in self.shapes or any(v is None for v in values):
                rows.append((name, None, None))
                return
            rows.append((name, values, all(ok(v) for v in values)))

        for shape in PIPELINED_SHAPES:
            row(f"throughput >= 0.85x the reference at {shape}", "ours/reference rps", shape, lambda v: v >= 0.85)
        row("throughput >= 0.9x the reference at 1x1", "ours/reference rps", "1x1", lambda v: v >= 0.9)
        for shape in self.shapes:
            row(f"p99 <= 1.5x the reference's at {shape}", "ours/reference p99", shape, lambda v: v <= 1.5)
        row("throughput >= 3x the warmed Java NameServer at 4x8", "ours/java rps", "4x8", lambda v: v >= 3)
        return rows

    def report(self, meta):
        summary = self.summary()
        print()
        print(f"Route queries by shape (connections x in flight), {self.args.rounds} round(s) of "
              f"{self.args.shape_warmup} + {self.args.shape_duration} per server and shape, interleaved "
              f"reference → ours → Java; figures are medians over rounds, ratios medians of per-round ratios.")
        print("CPU µs/req: server CPU time (user+sys, /proc, 10 ms ticks) over the measured window per answered "
              "request; gen: the generator's.")
        head = (f"{'brokers':>7} {'shape':<6} {'server':<10} {'req/s':>9} {'p50 µs':>7} {'p99 µs':>7} "
                f"{'p99.9 µs':>8} {'srv µs/req':>10} {'gen µs/req':>10} {'x ref req/s':>11} {'x ref p99':>9} "
                f"{'x Java req/s':>12}")
        print(head)
        for size in self.sizes:
            bodies = self.bodies.get(size, {})
            print(f"-- route of {brokers_text(size)}: body "
                  + ", ".join(f"{KIND_NAMES[k]} {bodies[k]:,} B" for k in self.kinds if k in bodies))
            for shape in self.shapes:
                cell = summary.get(f"{size}/{shape}", {})
                ratios = cell.get("ratios", {})
                for kind in self.kinds:
                    m = cell.get(kind)
                    if not m:
                        continue
                    xr = ratios.get(f"{kind}/reference rps") if kind != "reference" else None
                    xp = ratios.get(f"{kind}/reference p99") if kind != "reference" else None
                    xj = ratios.get("ours/java rps") if kind == "ours" else None
                    r3 = lambda v: "" if v is None else f"{v:.2f}"  # noqa: E731
                    print(f"{size:>7} {shape:<6} {KIND_NAMES[kind]:<10} {fint(m['rps']):>9} {fint(m['p50']):>7} "
                          f"{fint(m['p99']):>7} {fint(m['p999']):>8} {fmt(m['server_us_per_req'], 1):>10} "
                          f"{fmt(m['bench_us_per_req'], 1):>10} {r3(xr):>11} {r3(xp):>9} {r3(xj):>12}".rstrip())
        print()
        print(f"Warm-up ({self.args.warm_shape}, windows of {self.args.warm_window}; Java until two in a row agree "
              f"within {self.args.warm_tolerance:.0%} and >= {self.args.warm_min:.0f} s, at most "
              f"{self.args.warm_max:.0f} s): cold = first window, warm = last window, measured = the interleaved "
              f"{self.args.warm_shape} figure")
        print(f"{'brokers':>7} {'server':<10} {'cold req/s':>10} {'cold p99':>9} {'warm req/s':>10} {'warm p99':>9} "
              f"{'measured':>9} {'windows':>7} {'seconds':>7}  converged")
        for size in self.sizes:
            for kind in self.kinds:
                w = dig(self.warmups, size, kind)
                if not w:
                    continue
                measured = dig(summary, f"{size}/{self.args.warm_shape}", kind, "rps")
                conv = {True: "yes", False: "NO", None: "-"}[w["converged"]]
                print(f"{size:>7} {KIND_NAMES[kind]:<10} {fint(w['cold']['rps']):>10} {fint(w['cold']['p99']):>9} "
                      f"{fint(w['warm']['rps']):>10} {fint(w['warm']['p99']):>9} {fint(measured):>9} "
                      f"{len(w['windows_rps']):>7} {w['seconds']:>7.0f}  {conv}")
        print()
        print("targets of the issue (benchmark figures of this run, not tests):")
        verdicts = []
        sizes = "/".join(map(str, self.sizes))
        for name, values, met in self.targets(summary):
            verdict = "N/A   " if met is None else ("MET   " if met else "MISSED")
            shown = "" if values is None else f" ({sizes} brokers: {' / '.join(f'{v:.2f}' for v in values)})"
            print(f"  {verdict} {name}{shown}")
            verdicts.append({"target": name, "route_sizes": self.sizes, "values": values, "met": met})
        print(f"# load average before {meta['load_before']}, after {meta['load_after']}; {meta['cpus']} CPUs "
              f"shared by the generator and the servers; mode {meta['mode']}")
        return summary, verdicts


def run_shapes(args, bench, servers, meta):
    kinds = ["reference"] + [k for k in ("ours", "java") if k in servers]
    shapes = Shapes(bench, kinds)
    print(f"# rmq-bench compare --shapes ({meta['mode']}): {', '.join(KIND_NAMES[k] for k in kinds)}; "
          f"routes of {shapes.sizes} brokers x {args.route_topics} topics; shapes {shapes.shapes}; "
          f"work dir {bench.work}", flush=True)
    print(f"# load average {meta['load_before']} (1, 5 min) on {meta['cpus']} CPUs", flush=True)
    failed = None
    started = time.monotonic()
    try:
        for size in shapes.sizes:
            shapes.size(size)
    except interop.Fail as e:
        failed = str(e)
        print(f"FAIL: {e}", flush=True)
        interop.print_logs(e.logs)
    except KeyboardInterrupt:
        failed = "interrupted"
        print("FAIL: interrupted", flush=True)
    finally:
        bench.ctx.cleanup()
    meta["load_after"] = load()
    meta["seconds"] = round(time.monotonic() - started)
    meta["shapes"] = {k: getattr(args, k) for k in SHAPES_FULL}
    meta["shapes"].update({"shape_list": shapes.shapes, "route_sizes": shapes.sizes, "warm_shape": args.warm_shape,
                           "warm_tolerance": args.warm_tolerance, "topics": args.route_topics,
                           "ref_workers": args.ref_workers or os.cpu_count()})
    summary, verdicts = shapes.report(meta)
    print(f"# total {meta['seconds']} s", flush=True)
    if failed or args.keep:
        print(f"# work dir kept: {bench.work}", flush=True)
    else:
        shutil.rmtree(bench.work, ignore_errors=True)
    result = {"meta": meta, "shapes": {"summary": summary, "warmup": shapes.warmups, "runs": shapes.runs},
              "targets": verdicts, "error": failed}
    print("BENCH_RESULT " + json.dumps(result, separators=(",", ":")), flush=True)
    return 1 if failed else 0


def enter_netns(args):
    """Re-executes this script in a new loopback-only network namespace (like interop/run.py)."""
    unshare = shutil.which("unshare")
    usable = unshare is not None and subprocess.run(
        [unshare, "--net", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    if not usable:
        raise SystemExit("compare.py: cannot create a network namespace (unshare --net); the Java NameServer 5.x "
                         "probes its host address. Use --netns off --servers ours to measure ours alone.")
    os.execv(unshare, [unshare, "--net", "--", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:],
                       "--netns", "inner"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller and shorter (smoke test, ~2 min)")
    for key, value in FULL.items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=None,
                            help=f"default {value} (quick: {QUICK[key]})")
    parser.add_argument("--open-fraction", type=float, default=0.5,
                        help="open-loop offered load as a fraction of Java's closed-loop throughput (0.5)")
    parser.add_argument("--open-rate", type=int, default=None,
                        help="open-loop offered load in req/s (overrides --open-fraction)")
    parser.add_argument("--tls", action="store_true",
                        help="also run the routes workloads over TLS against a fresh TLS-enforcing instance of "
                             "each server (adds ~1.5 min, --quick ~40 s)")
    parser.add_argument("--tls-open-rate", type=int, default=None,
                        help="TLS open-loop offered load in req/s (default: --open-fraction of Java's TLS "
                             "closed-loop throughput)")
    parser.add_argument("--shapes", action="store_true",
                        help="instead of the workloads above: route queries at several shapes and route sizes, "
                             "every figure a ratio to `rmq-bench reference-server` measured interleaved (reference, "
                             "ours, Java) in the same run, Java warmed first (full ~12-16 min, --quick ~4.5 min)")
    for key, value in SHAPES_FULL.items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=None,
                            help=f"--shapes: default {value} (quick: {SHAPES_QUICK[key]})")
    parser.add_argument("--shape-list", default="1x1,4x8,64x4,64x16",
                        help="--shapes: connections x requests in flight per connection (1x1,4x8,64x4,64x16)")
    parser.add_argument("--route-sizes", default="1,4,10",
                        help="--shapes: broker groups in the route, one server start per size (1,4,10)")
    parser.add_argument("--warm-shape", default="4x8", help="--shapes: the shape of the warm-up windows (4x8)")
    parser.add_argument("--warm-tolerance", type=float, default=0.05,
                        help="--shapes: Java is warm when two warm-up windows in a row agree within this (0.05)")
    parser.add_argument("--ref-workers", type=int, default=0,
                        help="--shapes: worker threads of the reference server (0: one per CPU, as ours)")
    parser.add_argument("--connections", type=int, nargs="?", const=0, default=None, metavar="N",
                        help="instead of the workloads above: hold N connections idle, then polling routes "
                             f"(N default {CONNS_COUNT['full']:,}, quick {CONNS_COUNT['quick']:,}; "
                             "full ~2 min, --quick ~1 min)")
    for key, value in CONNS_FULL.items():
        parser.add_argument("--" + key.replace("_", "-"), default=None,
                            help=f"--connections: default {value} (quick: {CONNS_QUICK[key]})")
    parser.add_argument("--silent-connections", action="store_true",
                        help="--connections: send nothing before polling (the cost of a connection that never spoke; "
                             "ours, TLS mode permissive, closes it after tls.handshake_timeout, 10 s)")
    parser.add_argument("--servers", default="java,ours",
                        help="which servers, in order (java,ours); --shapes always adds the reference server")
    parser.add_argument("--binary", default=str(OUR_BINARY.relative_to(REPO)),
                        help="our server's binary, relative to the repo root or absolute "
                             "(default: target/release/rmq-namesrv)")
    parser.add_argument("--threads", type=int, default=2, help="rmq-bench worker threads (2)")
    parser.add_argument("--nice", type=int, default=0,
                        help="run servers and generator under `nice -n N` (e.g. -10 on a shared machine)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, GC log, bench output)")
    parser.add_argument("--netns", choices=("auto", "on", "off", "inner"), default="auto",
                        help="loopback-only network namespace (default: auto = on)")
    args = parser.parse_args()
    preset = QUICK if args.quick else FULL
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for key, value in (SHAPES_QUICK if args.quick else SHAPES_FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for key, value in (CONNS_QUICK if args.quick else CONNS_FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.shapes and args.tls:
        raise SystemExit("compare.py: --shapes runs plain TCP only (drop --tls)")
    if args.connections is not None:
        if args.shapes or args.tls:
            raise SystemExit("compare.py: --connections runs alone, plain TCP (drop --shapes and --tls)")
        if args.connections == 0:
            args.connections = CONNS_COUNT["quick" if args.quick else "full"]
        if args.connections < 1:
            raise SystemExit("compare.py: --connections takes a positive count")
        for key in CONNS_FULL:
            seconds(getattr(args, key))

    missing = [str(p) for p in ((REPO / args.binary), BENCH_BINARY) if not p.is_file()]
    if missing:
        raise SystemExit(f"compare.py: {', '.join(missing)} not found: run `cargo build --release --workspace` first")
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if not set(servers) <= {"java", "ours"} or not servers:
        raise SystemExit("compare.py: --servers takes java and/or ours")
    if "java" in servers:
        try:
            interop.server_classpath("5", "namesrv")
        except interop.Fail as e:
            raise SystemExit(f"compare.py: {e}")
    if args.netns == "off" and "java" in servers:
        raise SystemExit("compare.py: the Java NameServer 5.x dials its host's address by itself; it runs only "
                         "inside the loopback-only namespace (drop --netns off, or use --servers ours)")
    if args.netns in ("auto", "on"):
        enter_netns(args)
    elif args.netns == "inner":
        interop.loopback_up()

    # SIGTERM unwinds like Ctrl-C, so every started process is stopped by PID.
    signal.signal(signal.SIGTERM, interop._on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="rmq-bench-"))
    bench = Bench(args, work)
    meta = {"mode": "quick" if args.quick else "full", "cpus": os.cpu_count(), "load_before": load(),
            "port": bench.port, "settings": {k: getattr(args, k) for k in FULL},
            "open_fraction": args.open_fraction, "nice": args.nice, "threads": args.threads,
            "binary": args.binary, "tls": args.tls}
    if args.shapes:
        return run_shapes(args, bench, servers, meta)
    if args.connections is not None:
        return run_conns(args, bench, servers, meta)
    print(f"# rmq-bench compare ({meta['mode']}): servers {servers} on {bench.addr}, work dir {work}", flush=True)
    print(f"# load average {meta['load_before']} (1, 5 min) on {meta['cpus']} CPUs", flush=True)
    results = {}
    failed = None
    started = time.monotonic()
    open_rate, tls_open_rate = args.open_rate, args.tls_open_rate
    try:
        for kind in servers:
            t0 = time.monotonic()
            print(f"## {kind}", flush=True)
            results[kind], rate, tls_rate = bench.suite(kind, open_rate, tls_open_rate)
            open_rate = open_rate or rate
            tls_open_rate = tls_open_rate or tls_rate
            print(f"# {kind}: {time.monotonic() - t0:.0f} s", flush=True)
    except interop.Fail as e:
        failed = str(e)
        print(f"FAIL: {e}", flush=True)
        interop.print_logs(e.logs)
    except KeyboardInterrupt:
        failed = "interrupted"
        print("FAIL: interrupted", flush=True)
    finally:
        bench.ctx.cleanup()
    meta["load_after"] = load()
    meta["seconds"] = round(time.monotonic() - started)
    meta["open_rate"] = open_rate
    meta["tls_open_rate"] = tls_open_rate
    verdicts = report(results, meta)
    report_tls(results)
    print(f"# total {meta['seconds']} s", flush=True)
    if failed or args.keep:
        print(f"# work dir kept: {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print("BENCH_RESULT " + json.dumps({"meta": meta, "results": results, "targets": verdicts, "error": failed},
                                       separators=(",", ":")), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
