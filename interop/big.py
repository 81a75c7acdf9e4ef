"""Interop scenarios of big brokers (issue 26): how brokers that carry many topics register.

run.py loads this module and calls register(run) with itself; the runner's names are used as
`R.<name>`.
"""

import time

R = None  # the runner module (run.py), set by register()


def register(runner):
    """Adds this module's scenarios to the runner's list."""
    global R
    R = runner
    R.scenario("broker5-compressed-register", modes=("ours", "java"))(s_compressed_register5)


def s_compressed_register5(ctx):
    """A 5.5.0 broker with `compressedRegister=true`: its BrokerOuterAPI compresses the
    REGISTER_BROKER body but always sends `compressed=false` in the header. Java's NameServer
    5.5.0 cannot read such a body (SYSTEM_ERROR "Failed to decode RegisterBrokerBody", every
    round): `--namesrv java` checks that the broker never appears in its cluster info within
    40 s (more than one registration round) and that its broker log names the refusal. Ours
    recognises the zlib stream by its bytes: the broker is in the cluster info, a producer sends
    N and a consumer receives N through it (produce_consume_probe)."""
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, ctx.uniq("broker-zip"), extra={"compressedRegister": "true"})
    if ns.kind == "ours":
        t0 = time.monotonic()
        ctx.wait_registered(ns.addr, broker)
        print(f"# {ctx.name}: the compressed registration taken; broker in cluster info "
              f"{time.monotonic() - t0:.1f} s after its start", flush=True)
        R.produce_consume_probe(ctx, "5", ns.addr, broker)
        return
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        rc, doc, _ = ctx.cli(ns.addr, [], "clusterList", timeout=30)
        R.check(doc is not None and broker.broker_name not in R.cluster_brokers(doc),
                f"Java's NameServer took the compressed registration: {doc}", ctx.logs)
        time.sleep(5)
    text = "".join(R.read_text(p) for p in sorted(broker.log.parent.glob("*.log")))
    refused = "Failed to decode RegisterBrokerBody" in text or "register broker failed" in text.lower()
    print(f"# {ctx.name}: Java's NameServer 5.5.0 refused the compressed registration for 40 s; "
          f"the broker's log names the refusal: {refused}", flush=True)
