#!/usr/bin/env python3
"""The scale curve: our NameServer against the Java NameServer 5.5.0, point by point, one run.

    cargo build --release -p rmq-namesrv -p rmq-bench
    python3 bench/scale.py --svg docs/scale.svg        # every point, both servers (see SCALE.md)
    python3 bench/scale.py --quick                     # 10k topics and 10 brokers only (smoke)
    python3 bench/scale.py --smoke --servers ours --netns off \\
        --binary target/debug/rmq-namesrv --bench-binary target/debug/rmq-bench   # CI (test-all.sh)

Points (each on a fresh server of each kind, Java first, then ours, on a free 127.0.0.1 port):

    t10k t100k t1m        10,000 / 100,000 / 1,000,000 topics on each of 2 broker groups
    b10 b100 b1000        10 / 100 / 1,000 broker groups x 1,000 topics, every topic on every group
    b10s b100s b1000s     the same, each topic on 2 groups only (spread)

Every broker group is a master and a slave (brokerId 1, same topics). Per point the driver starts
the server (the largest point selected with a kvConfig.json of --kv-entries entries, 100,000, in
Java's format, which both read: its start-up time is spawn -> first accepted connection), warms it
(`rmq-bench scale` at 2 x 2,000 topics under other names; those brokers disconnect, unregistering),
then runs `rmq-bench scale` (registration timed, RSS per entry, a re-registration round with route
probes, steady routes, the big reads) with the brokers held registered at the end: then, for Java,
`jcmd GC.class_histogram` (the objects live after a full GC, its idle figure read after the
warm-up), and the server is stopped by its PID
with its tables full (stop time). Java runs with the JVM options of its runserver.sh, the heap
sized for the point (-Xms = -Xmx = --java-heap or 1/2/4 GiB by entries), GC logged to its home.

Prints one table per figure (Java, ours, ours/Java), the growth per 10x of each figure along each
series (t, b, bs; linear is ~10x, flagged when over --superlinear, 12x), writes the results as JSON
(--json, default in the work dir) and, with --svg, a plot: bytes per entry and registration time
against entries, log axes. Every wait is bounded; every process started is stopped by its PID; the
work dir (under /tmp) is removed unless --keep. Python standard library only; nothing is built here.
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import compare  # noqa: E402  (servers' command lines, the interop helpers, netns)

interop = compare.interop
REPO = compare.REPO
BENCH_BINARY = compare.BENCH_BINARY

# name: (groups, topics per group, spread; 0 = every topic on every group)
POINTS = {
    "t10k": (2, 10_000, 0), "t100k": (2, 100_000, 0), "t1m": (2, 1_000_000, 0),
    "b10": (10, 1000, 0), "b100": (100, 1000, 0), "b1000": (1000, 1000, 0),
    "b10s": (10, 1000, 2), "b100s": (100, 1000, 2), "b1000s": (1000, 1000, 2),
}
SERIES = {"t": ["t10k", "t100k", "t1m"], "b": ["b10", "b100", "b1000"], "bs": ["b10s", "b100s", "b1000s"]}
QUICK = ["t10k", "b10"]
SMOKE = {"t10k": (2, 2000, 0), "b10": (4, 500, 2)}  # --smoke: the same names, tiny tables
KIND_NAMES = {"java": "Java 5.5.0", "ours": "ours"}


def java_heap(entries, forced):
    if forced:
        return forced
    return "1g" if entries <= 20_000 else "2g" if entries <= 200_000 else "4g"


def write_kv(path, entries):
    """kvConfig.json as Java's KVConfigManager writes it: {"configTable": {ns: {key: value}}}."""
    per_ns = 1000
    table = {f"ns{n:03d}": {f"key{n:03d}-{i:04d}": f"value-{n}-{i}" for i in range(min(per_ns, entries - n * per_ns))}
             for n in range(math.ceil(entries / per_ns))}
    path.write_text(json.dumps({"configTable": table}))


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def jcmd(pid, *command, timeout=120):
    out = subprocess.run(["jcmd", str(pid), *command], capture_output=True, text=True, timeout=timeout)
    return out.stdout


def java_live_heap_kib(pid):
    """The objects live after a full GC, KiB: the total of `jcmd GC.class_histogram`, which
    collects first and counts objects only. `GC.heap_info`'s "used" also counts the TLABs that
    threads took after the collection, MiBs of noise at the small points (Java's b10 figure read
    anywhere from 0 to 673 B per entry); None if jcmd fails."""
    try:
        text = jcmd(pid, "GC.class_histogram", timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^Total\s+\d+\s+(\d+)\s*$", text, re.M)
    return int(m.group(1)) // 1024 if m else None


def gc_pauses(home):
    """(pauses, total pause ms, full GCs) from the -Xlog:gc file(s) in home."""
    count, total, full = 0, 0.0, 0
    for log in sorted(Path(home).glob("rmq_srv_gc.log*")):
        for line in log.read_text(errors="replace").splitlines():
            m = re.search(r"\] GC\(\d+\) (Pause \S+).* (\d+\.\d+)ms$", line)
            if m:
                count += 1
                total += float(m.group(2))
                full += m.group(1) == "Pause Full"
    return count, round(total, 1), full


class Scale:
    """Runs the points, remembering every process by PID (compare.Bench's servers)."""

    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.bench_binary = (REPO / args.bench_binary).resolve()
        self.bench = compare.Bench(argparse.Namespace(binary=args.binary, nice=0, ref_workers=0, threads=2), work)

    def start(self, kind, label, heap, kv_entries):
        port = interop.free_port()
        addr = f"127.0.0.1:{port}"
        home = self.bench.ctx.home(label)
        if kv_entries:
            write_kv(home / "kvConfig.json", kv_entries)
        argv, env = self.bench.server_argv(kind, home, port=port)
        if kind == "java":
            argv = [f"-Xms{heap}" if a.startswith("-Xms") else f"-Xmx{heap}" if a.startswith("-Xmx") else a
                    for a in argv]
        t0 = time.monotonic()
        proc = self.bench.ctx.spawn(label, argv, home, env=env)
        proc.addr = addr
        self.bench.ctx.logs.append((f"{label} stderr", proc.stderr))

        def ready():
            if not proc.alive():
                raise interop.Fail(f"{label} exited with {proc.popen.returncode} during start-up", self.bench.ctx.logs)
            return interop.port_open(addr)

        interop.wait_until(f"{label} to accept on {addr}", 180, 0.01, ready)
        return proc, time.monotonic() - t0

    def scale(self, label, proc, argv, timeout, on_hold=None):
        """Runs `rmq-bench scale`; calls on_hold() while the brokers are held; returns its JSON."""
        full = [str(self.bench_binary), "--addr", proc.addr, "--pid", str(proc.pid), "--timeout", "120s", "scale", *argv]
        log = self.work / f"{label}.log"
        popen = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 cwd=self.work, preexec_fn=interop._child_setup)
        timer = threading.Timer(timeout, popen.kill)
        timer.start()
        last, held = None, {}
        try:
            with open(log, "w") as sink:
                for raw in popen.stdout:
                    line = raw.decode(errors="replace").rstrip("\n")
                    sink.write(line + "\n")
                    if line.startswith("{"):
                        last = line
                        continue
                    if not self.args.quiet:
                        print(f"    {line}", flush=True)
                    if line.startswith("holding"):
                        held = on_hold() if on_hold else {}
                        popen.stdin.close()
            popen.wait(timeout=60)
        finally:
            timer.cancel()
            if popen.poll() is None:
                popen.kill()
                popen.wait(timeout=10)
        if popen.returncode != 0 or last is None:
            raise interop.Fail(f"rmq-bench scale {label} failed (exit {popen.returncode}): {last}",
                               [(label, log)] + self.bench.ctx.logs)
        result = json.loads(last)
        result.update(held)
        return result

    def point(self, kind, name, shape, kv_entries):
        groups, topics, spread = shape
        entries = groups * topics
        heap = java_heap(entries, self.args.java_heap)
        label = f"{kind}-{name}"
        proc, start_s = self.start(kind, label, heap, kv_entries)
        out = {"start_s": round(start_s, 3), "kv_entries": kv_entries, "java_heap": heap if kind == "java" else None}
        try:
            warm = ["--groups", "2", "--topics", str(min(2000, topics)), "--prefix", "Warm", "--reads", "1",
                    "--steady", "1s"]
            for _ in range(self.args.warm_runs if kind == "java" else 1):
                self.scale(f"{label}-warm", proc, warm, 300)
            # The idle figure is read once the warm-up's garbage is given back (ours: free heap
            # pages 2 s after the last large body, once more if bodies came meanwhile), so that
            # a give-back during the point is not counted as the tables being smaller.
            time.sleep(0 if self.args.smoke else SETTLE_S)
            if kind == "java":
                # After the warm-up, as our idle RSS is: the classes and pools it brings are
                # not the point's.
                out["idle_live_heap_kib"] = java_live_heap_kib(proc.pid)

            def on_hold():
                held = {"held_rss_kib": rss_kib(proc.pid)}
                if kind == "java":
                    held["live_heap_kib"] = java_live_heap_kib(proc.pid)
                    held["rss_after_gc_kib"] = rss_kib(proc.pid)
                held["stop_s"] = round(self.bench.stop(proc), 3)
                return held

            argv = ["--groups", str(groups), "--topics", str(topics), "--spread", str(spread),
                    "--hold", "600s", "--steady", self.args.steady, "--probe-rate", str(self.args.probe_rate)]
            out.update(self.scale(label, proc, argv, self.args.point_timeout, on_hold))
        finally:
            if proc in self.bench.ctx.procs:
                out.setdefault("stop_s", round(self.bench.stop(proc), 3))
        if kind == "java":
            out["gc_pauses"], out["gc_pause_ms"], out["gc_full"] = gc_pauses(proc.home)
        return out


# ---------------------------------------------------------------------------------------------
# figures

def dig(d, *path):
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def per_entry(r, key):
    v = dig(r, key)
    return None if v is None or not r.get("entries") else v * 1024 / r["entries"]


def live_per_entry(r):
    live, idle = dig(r, "live_heap_kib"), dig(r, "idle_live_heap_kib")
    return None if live is None or idle is None else max(live - idle, 0) * 1024 / r["entries"]


def kib_mib(v):
    return None if v is None else v / 1024


# Seconds between the warm-up and the point (see Point.point).
SETTLE_S = 6

# (title, unit, getter); getter(result) -> number or None
FIGURES = [
    ("RSS with the tables, settled (MiB)", "MiB", lambda r: kib_mib(dig(r, "memory", "rss_kib"))),
    ("RSS per entry above idle, settled 4 s after registering (B)", "B",
     lambda r: dig(r, "memory", "bytes_per_entry")),
    ("RSS per entry above idle, 1 s after registering (B)", "B",
     lambda r: dig(r, "memory", "transient_bytes_per_entry")),
    ("Java live heap per entry after full GC, above idle (B)", "B", live_per_entry),
    ("data floor per entry (B)", "B", lambda r: dig(r, "memory", "floor_per_entry")),
    ("registration of everything (s)", "s", lambda r: dig(r, "register", "s")),
    ("registration: server CPU (s)", "s", lambda r: dig(r, "register", "cpu", "server_cpu_s")),
    ("re-registration round (s)", "s", lambda r: dig(r, "reregister", "s")),
    ("re-registration round: server CPU (s)", "s", lambda r: dig(r, "reregister", "cpu", "server_cpu_s")),
    ("route p99 of the first asks after registering (ms)", "ms",
     lambda r: ms(dig(r, "first_routes", "latency_us", "p99"))),
    ("route p99 during the round (ms)", "ms", lambda r: ms(dig(r, "reregister", "routes", "latency_us", "p99"))),
    ("route max during the round (ms)", "ms", lambda r: ms(dig(r, "reregister", "routes", "latency_us", "max"))),
    ("route p99 steady (ms)", "ms", lambda r: ms(dig(r, "steady_routes", "latency_us", "p99"))),
    ("route throughput, closed loop (answers/s)", "/s", lambda r: dig(r, "route_throughput", "answers_per_s")),
    ("route throughput, closed loop (MiB/s of bodies)", "MiB/s", lambda r: dig(r, "route_throughput", "mib_per_s")),
    ("GET_BROKER_CLUSTER_INFO median (ms)", "ms", lambda r: dig(r, "reads", "cluster_info", "ms_median")),
    ("GET_ALL_TOPIC_LIST_FROM_NAMESERVER median (ms)", "ms", lambda r: dig(r, "reads", "topic_list", "ms_median")),
    ("GET_TOPICS_BY_CLUSTER median (ms)", "ms", lambda r: dig(r, "reads", "topics_by_cluster", "ms_median")),
    ("peak RSS above RSS while answering the topic list (MiB)", "MiB",
     lambda r: kib_mib(dig(r, "reads", "topic_list", "peak_rss_delta_kib"))),
    ("peak RSS above RSS while answering cluster info (MiB)", "MiB",
     lambda r: kib_mib(dig(r, "reads", "cluster_info", "peak_rss_delta_kib"))),
    ("start-up (s)", "s", lambda r: r.get("start_s")),
    ("stop with the tables registered (s)", "s", lambda r: r.get("stop_s")),
]


def ms(us):
    return None if us is None else us / 1000


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if v >= 0.01 else f"{v:.4f}"


def table(results, names, title, get):
    lines = [f"### {title}", "", "| point | entries | Java 5.5.0 | ours | ours/Java |", "|---|---:|---:|---:|---:|"]
    for name in names:
        j, o = get(results.get("java", {}).get(name) or {}), get(results.get("ours", {}).get(name) or {})
        entries = next((r[name]["entries"] for r in results.values() if r.get(name)), None)
        ratio = f"{o / j:.2f}" if o is not None and j else "-"
        lines.append(f"| {name} | {entries or '-':,} | {fmt(j)} | {fmt(o)} | {ratio} |")
    growth = []
    for series, members in SERIES.items():
        present = [m for m in members if m in names]
        for kind in ("java", "ours"):
            vals = [get(results.get(kind, {}).get(m) or {}) for m in present]
            steps = []
            for a, b in zip(vals, vals[1:]):
                if a and b is not None and a > 0:
                    g = b / a
                    steps.append(f"{g:.1f}x" + (" SUPERLINEAR" if g > ARGS.superlinear else ""))
                else:
                    steps.append("-")
            if steps:
                growth.append(f"{series} {KIND_NAMES[kind]}: " + ", ".join(steps))
    if growth:
        lines += ["", "growth per 10x: " + "; ".join(growth)]
    return "\n".join(lines)


def answers(results, names):
    """What each server answers for the big reads: code, size, past 16 MiB or not, errors."""
    lines = ["### big reads: answer code and size (past the 16 MiB client frame limit marked)", "",
             "| point | read | Java 5.5.0 | ours |", "|---|---|---|---|"]
    for name in names:
        for read in ("cluster_info", "topic_list", "topics_by_cluster"):
            cells = []
            for kind in ("java", "ours"):
                r = dig(results.get(kind, {}).get(name), "reads", read)
                if not r:
                    cells.append("-")
                    continue
                text = f"code {r.get('code')}, {(r.get('frame_bytes') or 0) / 1048576:.2f} MiB"
                if r.get("over_client_limit"):
                    text += " **past 16 MiB**"
                if r.get("remark"):
                    text += f" ({r['remark'][:80]})"
                if r.get("error"):
                    text += f" error: {r['error'][:80]}"
                cells.append(text)
            lines.append(f"| {name} | {read} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def svg(results, path):
    """Two log-log panels against entries: memory per entry (RSS above idle for both, Java's live
    heap too) and the registration time, one line per series (t, b, bs) and server."""
    lines_of = [
        ("bytes per entry", [("ours RSS", "#1f77b4", "ours", lambda r: dig(r, "memory", "bytes_per_entry")),
                             ("Java RSS", "#d62728", "java", lambda r: dig(r, "memory", "bytes_per_entry")),
                             ("Java live heap", "#ff7f0e", "java", live_per_entry),
                             ("data floor", "#2ca02c", "ours", lambda r: dig(r, "memory", "floor_per_entry"))]),
        ("registration of everything (s)", [("ours", "#1f77b4", "ours", lambda r: dig(r, "register", "s")),
                                            ("Java", "#d62728", "java", lambda r: dig(r, "register", "s"))]),
    ]
    dashes = {"t": "", "b": "6,3", "bs": "2,3"}
    w, h, pad = 380, 260, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * w + 40}" height="{h + 90}" '
           f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    for i, (title, lines) in enumerate(lines_of):
        x0 = 20 + i * (w + 20)
        pts = [(r["entries"], get(r)) for _, _, kind, get in lines for r in results.get(kind, {}).values()
               if r and get(r)]
        if not pts:
            continue
        xmin = math.floor(min(math.log10(x) for x, _ in pts))
        xmax = max(math.ceil(max(math.log10(x) for x, _ in pts)), xmin + 1)
        ymin = math.floor(min(math.log10(y) for _, y in pts))
        ymax = max(math.ceil(max(math.log10(y) for _, y in pts)), ymin + 1)

        def sx(v, xmin=xmin, xmax=xmax, x0=x0):
            return x0 + pad + (math.log10(v) - xmin) / (xmax - xmin) * (w - pad - 10)

        def sy(v, ymin=ymin, ymax=ymax):
            return 30 + (h - 30) - (math.log10(v) - ymin) / (ymax - ymin) * (h - 30)

        out.append(f'<text x="{x0 + w / 2}" y="18" text-anchor="middle" font-weight="bold">{title}</text>')
        out.append(f'<rect x="{x0 + pad}" y="30" width="{w - pad - 10}" height="{h - 30}" fill="none" stroke="#999"/>')
        for e in range(xmin, xmax + 1):
            out.append(f'<text x="{sx(10 ** e):.1f}" y="{h + 14}" text-anchor="middle">1e{e}</text>')
        for e in range(ymin, ymax + 1):
            y = sy(10 ** e)
            out.append(f'<line x1="{x0 + pad}" x2="{x0 + w - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{x0 + pad - 4}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
        out.append(f'<text x="{x0 + w / 2}" y="{h + 28}" text-anchor="middle">topic-broker entries</text>')
        for n, (label, colour, kind, get) in enumerate(lines):
            out.append(f'<text x="{x0 + pad + 6}" y="{44 + 13 * n}" fill="{colour}">{label}</text>')
            for series, members in SERIES.items():
                line = [(results[kind][m]["entries"], get(results[kind][m])) for m in members
                        if results.get(kind, {}).get(m) and get(results[kind][m])]
                if not line:
                    continue
                d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in line)
                out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="1.5" '
                           f'stroke-dasharray="{dashes[series]}"/>')
                out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{colour}"/>' for x, y in line]
    legend = "solid: topics (t, 2 groups); dashed: brokers (b, 1,000 topics each); dotted: brokers, topics spread (bs)"
    out.append(f'<text x="20" y="{h + 50}">{legend}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def report(results, names, meta):
    blocks = [f"## scale: {', '.join(names)} ({meta['seconds']} s, {meta['cpus']} CPUs)"]
    blocks += [table(results, names, title, get) for title, _, get in FIGURES]
    blocks.append(answers(results, names))
    failures = [f"{kind} {name}: {r['error']}" for kind, points in results.items()
                for name, r in points.items() if r and r.get("error")]
    for kind, points in results.items():
        for name, r in points.items():
            probed = ("first_routes",), ("reregister", "routes"), ("steady_routes",), ("route_throughput",)
            lost = sum(dig(r, *keys, "not_success") or 0 for keys in probed)
            errs = [e for keys in probed for e in (dig(r, *keys, "errors") or [])]
            if lost or errs:
                failures.append(f"{kind} {name}: route probes: {lost} answers not SUCCESS, errors {errs[:3]}")
    if failures:
        blocks.append("### failures\n\n" + "\n".join(f"- {f}" for f in failures))
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", default=",".join(POINTS), help=f"subset of {','.join(POINTS)}")
    p.add_argument("--quick", action="store_true", help=f"points {','.join(QUICK)} only")
    p.add_argument("--smoke", action="store_true", help="tiny tables under the same point names (CI)")
    p.add_argument("--servers", default="java,ours", help="java,ours (in this order)")
    p.add_argument("--kv-entries", type=int, default=100_000, help="KV entries at the largest point (100,000)")
    p.add_argument("--java-heap", default=None, help="Java -Xms/-Xmx for every point (default by entries)")
    p.add_argument("--warm-runs", type=int, default=2, help="Java warm-up runs per point (2)")
    p.add_argument("--steady", default="3s", help="steady-state route probing per point (3s)")
    p.add_argument("--probe-rate", type=float, default=1000.0,
                   help="route probes a second during the round and at steady state, all four "
                        "connections together (1000; 0: closed loop). A closed-loop second follows "
                        "the steady state either way (route throughput).")
    p.add_argument("--point-timeout", type=float, default=1800, help="seconds per point and server (1800)")
    p.add_argument("--superlinear", type=float, default=12.0, help="flag growth per 10x above this (12)")
    p.add_argument("--binary", default=str(compare.OUR_BINARY.relative_to(REPO)), help="our server's binary")
    p.add_argument("--bench-binary", default=str(BENCH_BINARY.relative_to(REPO)), help="rmq-bench's binary")
    p.add_argument("--json", default=None, help="write the results here (default: the work dir)")
    p.add_argument("--svg", default=None, help="write the plot here")
    p.add_argument("--md", default=None, help="write the tables (markdown) here")
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument("--quiet", action="store_true", help="do not echo rmq-bench's lines")
    p.add_argument("--netns", choices=("auto", "on", "off", "inner"), default="auto")
    return p.parse_args()


def enter_netns():
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--net", "true"], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, timeout=30).returncode != 0:
        raise SystemExit("scale.py: cannot create a network namespace (unshare --net); the Java NameServer 5.x "
                         "probes its host address. Use --netns off --servers ours to measure ours alone.")
    os.execv(unshare, [unshare, "--net", "--", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:],
                       "--netns", "inner"])


def main():
    args = parse_args()
    global ARGS
    ARGS = args
    names = QUICK if args.quick or (args.smoke and args.points == ",".join(POINTS)) else [n.strip() for n in args.points.split(",") if n.strip()]
    unknown = [n for n in names if n not in POINTS]
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if unknown or not names:
        raise SystemExit(f"scale.py: unknown points {unknown}; choose from {','.join(POINTS)}")
    if not servers or not set(servers) <= {"java", "ours"}:
        raise SystemExit("scale.py: --servers takes java and/or ours")
    if args.smoke and not set(names) <= set(SMOKE):
        raise SystemExit(f"scale.py: --smoke runs points {','.join(SMOKE)} only")
    missing = [str(p) for p in (REPO / args.binary, REPO / args.bench_binary) if not p.is_file()]
    if missing:
        raise SystemExit(f"scale.py: {', '.join(missing)} not found: cargo build --release -p rmq-namesrv -p rmq-bench")
    if args.netns == "off" and "java" in servers:
        raise SystemExit("scale.py: the Java NameServer runs only inside the loopback-only namespace")
    if args.netns in ("auto", "on"):
        enter_netns()
    elif args.netns == "inner":
        interop.loopback_up()
    compare.raise_fd_limit(10_000)
    signal.signal(signal.SIGTERM, interop._on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="rmq-scale-"))
    runner = Scale(args, work)
    shapes = {n: (SMOKE[n] if args.smoke else POINTS[n]) for n in names}
    largest = max(names, key=lambda n: shapes[n][0] * shapes[n][1])
    results, failed, started = {k: {} for k in servers}, None, time.monotonic()
    print(f"# scale: points {names}, servers {servers}, work dir {work}", flush=True)
    try:
        for name in names:
            for kind in servers:
                t0 = time.monotonic()
                print(f"## {kind} {name} {shapes[name]}", flush=True)
                try:
                    results[kind][name] = runner.point(kind, name, shapes[name],
                                                       args.kv_entries if name == largest else 0)
                except interop.Fail as e:
                    print(f"FAIL {kind} {name}: {e}", flush=True)
                    interop.print_logs(e.logs[:2])
                    results[kind][name] = {"error": str(e)[:500], "entries": shapes[name][0] * shapes[name][1]}
                    failed = failed or str(e)
                print(f"# {kind} {name}: {time.monotonic() - t0:.0f} s", flush=True)
    except KeyboardInterrupt:
        failed = "interrupted"
    finally:
        runner.bench.ctx.cleanup()
    meta = {"seconds": round(time.monotonic() - started), "cpus": os.cpu_count(), "smoke": args.smoke,
            "points": {n: shapes[n] for n in names}}
    text = report(results, names, meta)
    print(text, flush=True)
    out = {"meta": meta, "results": results, "error": failed}
    Path(args.json or work / "scale.json").write_text(json.dumps(out, indent=1) + "\n")
    if args.md:
        Path(args.md).write_text(text + "\n")
    if args.svg:
        svg(results, args.svg)
    print(f"# total {meta['seconds']} s", flush=True)
    if args.keep or failed:
        print(f"# work dir kept: {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
