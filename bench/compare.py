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
"""

import argparse
import json
import os
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
    "routes_warmup": "5s", "routes_duration": "15s", "connections": 64, "pipeline": 16,
    "route_brokers": 10, "route_topics": 1000,
    "storm_brokers": 100, "storm_topics": 10000, "storm_period": "3s", "storm_rate": 1000,
    "storm_warmup": "3s", "storm_idle": "10s", "storm_duration": "30s",
}
QUICK = {
    "routes_warmup": "2s", "routes_duration": "5s", "connections": 64, "pipeline": 16,
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

    def server_argv(self, kind, home, tls=False):
        """(argv, env) starting `kind` on self.port with its state under home; with tls, TLS
        enforced with the server's test-mode self-signed certificate."""
        # A tls.config.file that does not exist: no /etc/rocketmq/tls.properties can change the run.
        no_tls_file = home / "no-such-tls.properties"
        if kind == "java":
            conf = home / "namesrv.properties"
            interop.write_properties(conf, {
                "listenPort": self.port,
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
        argv = [str(self.binary), "--listen", self.addr,
                "--kv-config-path", str(home / "kvConfig.json"),
                "--config-store-path", str(home / "namesrv.properties"),
                "--log-level", "warn"]
        if tls:
            conf = home / "tls.toml"
            conf.write_text(f'[tls]\nmode = "enforcing"\ntest_mode = true\nconfig_file = "{no_tls_file}"\n')
            argv += ["--config", str(conf)]
        return argv, {}

    def port_free(self):
        ok = interop.wait_until(f"{self.addr} to be free", 30, 0.2, lambda: not interop.port_open(self.addr))
        return ok

    def start(self, kind, label, tls=False):
        self.port_free()
        home = self.ctx.home(label)
        argv, env = self.server_argv(kind, home, tls)
        proc = self.ctx.spawn(label, self.nice + argv, home, env=env)
        proc.addr = self.addr
        self.ctx.logs.append((f"{label} stderr", proc.stderr))

        def ready():
            if not proc.alive():
                raise interop.Fail(f"{label} exited with {proc.popen.returncode} during start-up", self.ctx.logs)
            return interop.port_open(self.addr)

        interop.wait_until(f"{label} to accept on {self.addr}", 120, 0.05, ready)
        return proc

    def stop(self, proc):
        took = self.ctx.stop(proc, signal.SIGTERM, timeout=30)
        self.ctx.procs.remove(proc)
        return took

    # -- rmq-bench -----------------------------------------------------------------------------

    def bench(self, label, argv, timeout, env=None, cwd=None, server_pid=None):
        """Runs rmq-bench with argv, echoing its output indented; returns its final JSON line with
        `other_cores`: machine CPU (/proc/stat) not charged to the server or the generator, i.e.
        other users of the machine (or kernel work charged to no process), averaged over the run."""
        full = [*self.nice, str(BENCH_BINARY), "--addr", self.addr, "--threads", str(self.args.threads), *argv]
        log = self.work / f"{label}.log"
        (self.work / f"{label}.argv").write_text(" ".join(full) + "\n")
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
                    else:
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
        print(f"# {label}: {wall:.0f} s; CPU not charged to the server or the generator (other processes): "
              f"{result['other_cores']:.2f} cores", flush=True)
        return result

    def routes(self, label, pid, rate=None, tls=False):
        a = self.args
        argv = ["--pid", str(pid), *(["--tls"] if tls else []),
                "routes", "--brokers", str(a.route_brokers), "--topics", str(a.route_topics),
                "--connections", str(a.connections), "--pipeline", str(a.pipeline),
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
    parser.add_argument("--servers", default="java,ours", help="which servers, in order (java,ours)")
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
