"""Interop scenarios of the fleet check (`rmq-namesrv admin fleetCheck`, README "Fleet check"):
what differs between NameServers that should agree, reported with exit code 1 and named in
--json.

run.py loads this module and calls register(run) with itself; the runner's names are used as
`R.<name>`. The scenarios start their own NameServers (ours and Java's 5.5.0 side by side), so
they run in mode "ours" only.
"""

import json

R = None  # the runner module (run.py), set by register()

SCENARIOS = []


def register(runner):
    """Adds this module's scenarios to the runner's list (in this order)."""
    global R
    R = runner
    for name, fn in SCENARIOS:
        runner.scenario(name, modes=("ours",))(fn)


def scenario(name):
    def add(fn):
        SCENARIOS.append((name, fn))
        return fn
    return add


def fleet_check(ctx, servers, *extra):
    """Our CLI's fleetCheck over `servers` (procs with .addr); returns (exit status, document)."""
    rc, doc, err = ctx.cli(";".join(s.addr for s in servers), [], "fleetCheck", *extra, timeout=120)
    R.check(doc is not None, f"fleetCheck printed no JSON (exit {rc}): {err[:600]}", ctx.logs)
    return rc, doc


def findings(doc, kind, subject_part):
    return [f for f in doc["findings"] if f["kind"] == kind and subject_part in f["subject"]]


def presence(finding, servers):
    """{label: True/False}: which servers have the finding's subject."""
    return {s.label: finding["values"].get(s.addr) is not None for s in servers}


def summary(doc):
    return {k: v for k, v in doc["counts"].items() if v}


@scenario("fleet-java5")
def s_fleet_java5(ctx):
    """Drift between ours and the Java NameServer 5.5.0: a 5.5.0 broker registered with Java's
    only (broker-java-only) and one registered with both (broker-both), a KV entry
    (ORDER_TOPIC_CONFIG fleetJavaOnly) put to Java's only. fleetCheck -n
    "ours;java" exits 1 and names broker-java-only as known to Java's only, and its queues of
    the topics both brokers register (TBW102, the cluster's topic) as on Java's only; broker-both
    is in no broker or queue finding: the two implementations agree on what both were told."""
    ours = ctx._start_ours("namesrv-ours")
    java = ctx._start_java_namesrv("namesrv-java", "5")
    both = ctx.start_broker("5", f"{ours.addr};{java.addr}", "broker-both", wait=False)
    only = ctx.start_broker("5", java.addr, "broker-java-only", wait=False)
    ctx.await_broker(both)
    ctx.await_broker(only)
    ctx.wait_registered(java.addr, only)
    ctx.wait_registered(java.addr, both)
    ctx.wait_registered(ours.addr, both)
    # a KV entry on Java's only (PUT_KV_CONFIG, 100; ORDER_TOPIC_CONFIG is a namespace asked)
    reply, _ = R.remoting_call(java.addr, 100, {"namespace": "ORDER_TOPIC_CONFIG", "key": "fleetJavaOnly",
                                                "value": "broker-java-only:4"})
    R.check(reply.get("code") == 0, f"PUT_KV_CONFIG to Java's NameServer: {reply}", ctx.logs)
    servers = (ours, java)
    rc, doc = fleet_check(ctx, servers)
    R.check(rc == 1 and doc["ok"] is False, f"fleetCheck exit {rc}, expected 1: {json.dumps(doc)[:1500]}", ctx.logs)
    kv = findings(doc, "kv", "fleetJavaOnly")
    R.check(kv and presence(kv[0], servers) == {ours.label: False, java.label: True},
            f"the KV entry on Java's only is not reported so: {json.dumps(doc['findings'])[:1500]}", ctx.logs)
    (missing,) = findings(doc, "broker", "broker broker-java-only ") or [None]
    R.check(missing is not None and presence(missing, servers) == {ours.label: False, java.label: True},
            f"broker-java-only not reported as on Java's only: {json.dumps(doc['findings'])[:1500]}", ctx.logs)
    R.check(not findings(doc, "broker", "broker broker-both "),
            f"broker-both reported as drift: {json.dumps(findings(doc, 'broker', 'broker-both'))}", ctx.logs)
    queues = findings(doc, "queue", "queues on broker broker-java-only")
    R.check(any(presence(f, servers) == {ours.label: False, java.label: True} for f in queues),
            f"no queue finding of broker-java-only on Java's only: {json.dumps(doc['findings'])[:1500]}", ctx.logs)
    R.check(not findings(doc, "queue", "queues on broker broker-both"),
            f"broker-both's queues differ: {json.dumps(findings(doc, 'queue', 'broker-both'))[:1500]}", ctx.logs)
    # text output too: the same verdict
    rc_text, _, _ = ctx.cli(f"{ours.addr};{java.addr}", [], "fleetCheck", timeout=120)
    config = [f["subject"] for f in doc["findings"] if f["kind"] == "config"]
    print(f"# {ctx.name}: fleetCheck ours;java5 exit {rc} ({rc_text} without --json), {doc['topics']} topics "
          f"in {doc['elapsedMs']} ms; drift {json.dumps(summary(doc), sort_keys=True)}; configuration keys "
          f"whose defaults differ between the two: {config}", flush=True)


@scenario("fleet-acl-broker-network5")
def s_fleet_acl_broker_network5(ctx):
    """The state acl-broker-network5 builds on purpose (run.py: that scenario runs first, as it
    is, and hands its three servers over): broker-net registered with A only (B refuses its
    address, C its unsigned requests), broker-signed with C only. fleetCheck -n "A;B;C" exits 1
    and names both brokers as known to their one server only."""
    a, b, c = R.s_acl_broker_network5(ctx)
    servers = (a, b, c)
    rc, doc = fleet_check(ctx, servers)
    R.check(rc == 1 and doc["ok"] is False, f"fleetCheck exit {rc}, expected 1: {json.dumps(doc)[:1500]}", ctx.logs)
    expected = {"broker-net": a, "broker-signed": c}
    for name, holder in expected.items():
        found = findings(doc, "broker", f"broker {name} ")
        want = {s.label: s is holder for s in servers}
        R.check(found and all(presence(f, servers) == want for f in found),
                f"{name}: expected on {holder.label} only: {json.dumps(found)[:1000]}", ctx.logs)
    R.check(doc["counts"]["broker"] == 2, f"broker drift {doc['counts']['broker']}, expected 2", ctx.logs)
    print(f"# {ctx.name}: fleetCheck A;B;C exit {rc}: broker-net on A only, broker-signed on C only; "
          f"drift {json.dumps(summary(doc), sort_keys=True)} over {doc['topics']} topics in {doc['elapsedMs']} ms",
          flush=True)
