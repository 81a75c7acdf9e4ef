"""Interop scenario: the controller's metrics against Java 5.5.0's (docs/metrics.md, "The
controller").

The official Java NameServer 5.5.0 with its embedded controller and its OpenTelemetry Prometheus
exporter (`metricsExporterType=PROM`), and ours with the same controller properties and its HTTP
port, get the same controller requests (diff_controller.py's deterministic sequence, JSON
headers, on one connection per server that stays open, so no broker is lost and no election
starts by itself). Then both are scraped and Java's families are compared with ours through the
mapping table of docs/metrics.md: `role` (Java's up-down counter reads 2 less: leader 1, ours 3),
`request_total` per request type and handling status, `request_latency_microseconds` against
`request_latency_seconds` (counts; Java's bucket bounds are ours times 10^6), `election_total`
per cluster, broker set and result, `active_broker_num` per broker set, and the node labels
(`group`, `peer_id`; `address` is each server's own controller address). run.py loads this module
and calls register(run); the runner's names are used as `R.<name>`.
"""

import re
import sys
import time
import urllib.request

R = None  # the runner module (run.py), set by register()

# Java's family name -> ours (docs/metrics.md, "From Java's dashboards").
MAPPING = {
    "role": "rmq_namesrv_controller_role",
    "request_total": "rmq_namesrv_controller_request_total",
    "request_latency_microseconds_count": "rmq_namesrv_controller_request_latency_seconds_count",
    "election_total": "rmq_namesrv_controller_election_total",
    "active_broker_num": "rmq_namesrv_controller_active_broker_num",
}
# Labels only one side has: Java's exporter adds its instrumentation scope; the node's own
# address differs by construction (each server listens on its own port).
IGNORED_LABELS = {"otel_scope_name", "otel_scope_version", "address"}
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def register(runner):
    global R
    R = runner
    runner.scenario("controller-metrics5", modes=("ours",))(controller_metrics5)


def scrape(url):
    """{family: {frozenset(labels): value}} of a Prometheus or OpenMetrics text scrape."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode("utf-8", "replace")
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = {k: v for k, v in LABEL.findall(m.group(2) or "") if k not in IGNORED_LABELS}
        out.setdefault(m.group(1), {})[frozenset(labels.items())] = float(m.group(3))
    return out, text


def compare(java, ours, out):
    """The differences between Java's families and ours (a list of strings), printing the
    compared figures."""
    problems = []
    for jname, oname in MAPPING.items():
        jseries, oseries = java.get(jname, {}), ours.get(oname, {})
        if jname == "role":
            jseries = {k: v + 2 for k, v in jseries.items()}  # Java's offset (module docs)
        # ours shows every request type and status at zero; Java only those counted
        oseries = {k: v for k, v in oseries.items() if v != 0 or k in jseries}
        out(f"  {jname} -> {oname}: {len(jseries)} series (java), {len(oseries)} (ours)")
        for labels in sorted(set(jseries) | set(oseries), key=sorted):
            jv, ov = jseries.get(labels), oseries.get(labels)
            shown = ", ".join(f"{k}={v}" for k, v in sorted(labels))
            out(f"    {{{shown}}} java {jv} ours {ov}")
            if jv != ov:
                problems.append(f"{jname}{{{shown}}}: java {jv}, ours {ov}")
        if not jseries:
            problems.append(f"{jname}: Java exported no sample (exporter not running?)")
    return problems


def controller_metrics5(ctx):
    """See the module docs."""
    if not R.ISOLATED:
        # The official Java NameServer 5.x dials its host's address by itself: never outside.
        raise R.Fail("needs a loopback-only network namespace (unshare --net), which is not available here")
    if str(R.HERE) not in sys.path:
        sys.path.insert(0, str(R.HERE))
    sys.dont_write_bytecode = True
    import diff
    import diff_controller as dc

    def props(label):
        return {**R.controller_props(ctx, label, {"n0": f"127.0.0.1:{R.free_port()}"}, "n0"),
                "mappedFileSize": 16 * 1024 * 1024}

    prom = R.free_port()
    java_props = {**props("namesrv-java"), "metricsExporterType": "PROM",
                  "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": prom}
    # UPDATE_CONTROLLER_CONFIG is in the sequence: ours writes controllerConfigStorePath (Java's
    # default is under its user.home, which the runner sets), never the runner's home.
    ours_props = {**props("namesrv-ours"),
                  "controllerConfigStorePath": ctx.dir / "namesrv-ours-controller.properties"}
    java = ctx._start_java_namesrv("namesrv-java", "5", props=java_props)
    config = ctx.dir / "namesrv-ours-config" / "namesrv.properties"
    config.parent.mkdir(parents=True, exist_ok=True)
    R.write_properties(config, ours_props)
    http = f"127.0.0.1:{R.free_port()}"
    ours = ctx._start_ours("namesrv-ours", config=config, extra_args=["--http-listen", http])
    ctls = {"java": R.controller_self_addr(java_props), "ours": R.controller_self_addr(ours_props)}
    for proc, addr in ((java, ctls["java"]), (ours, ctls["ours"])):
        R.wait_until(f"{proc.label}'s controller to accept on {addr}", 60, 0.3,
                     lambda: proc.alive() and R.port_open(addr) or ctx._dead(proc))
    waited = dc.wait_leaders(ctls)
    print(f"# controller-metrics5: both controllers serve as leader ({waited:.1f} s)")
    norms = {name: dc.diff_normaliser(addr, None) for name, addr in ctls.items()}
    r = dc.CtlRunner(ctls["java"], ctls["ours"], norms, False, print)
    t0 = time.monotonic()
    try:
        r.stype, r.opaque_base, r.seq = diff.JSON, 1000, 0
        dc.run_pass(r, "m", 20)
        dc.run_policy(r, "m", 30)
        # The 904s are oneway: a last request on each connection shows they were all handled.
        r.req("metadata (1005), last", dc.METADATA, kind="ctl")
        print(f"# controller-metrics5: {r.steps} requests to each controller in "
              f"{time.monotonic() - t0:.1f} s; scraping with the connections open")
        java_figures, java_text = scrape(f"http://127.0.0.1:{prom}/metrics")
        ours_figures, ours_text = scrape(f"http://{http}/metrics")
    finally:
        r.close()
    (ctx.dir / "java-metrics.txt").write_text(java_text)
    (ctx.dir / "ours-metrics.txt").write_text(ours_text)
    ctx.logs.append(("Java's scrape", ctx.dir / "java-metrics.txt"))
    ctx.logs.append(("our scrape", ctx.dir / "ours-metrics.txt"))
    problems = compare(java_figures, ours_figures, print)
    for p in problems:
        print(f"# controller-metrics5: DIFF {p}")
    R.check(not problems, f"{len(problems)} figure(s) differ from Java's (DIFF lines above)", ctx.logs)
