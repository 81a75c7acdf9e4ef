"""Interop: a rolling restart of a two-NameServer fleet (warm restart, docs/route-rules.md).

A 5.5.0 broker registers with NameServers A and B; a Java 5.5.0 client looks the topic's route up
from each of them every 50 ms (RouteLoop, one per NameServer) and a producer (Sender, `A;B`)
sends throughout. A is restarted (SIGTERM, then started again on the same address), then, a
registration period later, B. Counted: the lookups a restarted NameServer answers without the
broker (TOPIC_NOT_EXIST, or a route without it) once it accepts again, the time until it
answers the route again, and the failed sends. Run for Java's NameServer 5.5.0 (`--namesrv
java`) and for ours with `registry.warm_restart` (goal: no lookup without the broker and no
failed send) and, with `run.py --long`, without it too. run.py loads this module and calls
register(run) with itself.
"""

import json
import time

R = None  # the runner module (run.py), set by register()

# Between the two restarts: more than one registration period (30 s), so the broker has
# registered with the first restarted NameServer again before the second one goes.
RESTART_GAP_S = 35
LOOKUP_INTERVAL_MS = 50
# The codes RouteLoop records: 17 TOPIC_NOT_EXIST, -2 a route without the broker.
WITHOUT_BROKER = (17, -2)


def register(runner):
    """Adds this module's scenarios to the runner's list."""
    global R
    R = runner
    R.scenario("rolling-restart5", modes=("ours", "java"))(s_rolling_restart5)


def start_ns(ctx, label, port, warm):
    """One NameServer of the fleet on 127.0.0.1:port (the same address at every start)."""
    if ctx.mode == "java":
        return ctx._start_java_namesrv(label, "5", props={"listenPort": port})
    config_dir = ctx.dir / f"{label}-config"
    config_dir.mkdir(parents=True, exist_ok=True)
    config = config_dir / "namesrv.toml"
    text = "[registry]\n"
    if warm:
        text += f'warm_restart = true\nsnapshot_path = "{config_dir / "routes.json"}"\n'
    config.write_text(text)
    return ctx._start_ours(label, config=config, listen=f"127.0.0.1:{port}")


def start_loop(ctx, ns_addr, topic, broker, max_s):
    label = "routeloop5"
    home = ctx.home(label)
    stop_file = home / "stop"
    argv = [R.java_bin(), *R.PEER_JVM, f"-Duser.home={home}", "-cp", R.client_classpath("5"),
            "rmqinterop.RouteLoop", "--namesrv", ns_addr, "--topic", topic, "--broker", broker,
            "--stop-file", str(stop_file), "--max-count", "100000", "--max-s", str(max_s),
            "--interval-ms", str(LOOKUP_INTERVAL_MS), "--timeout-ms", "1000"]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home)
    proc.stop_file = stop_file
    ctx.logs.append((f"{label} stderr", proc.stderr))
    return proc


def loop_result(ctx, loop):
    loop.stop_file.write_text("stop\n")
    try:
        loop.popen.wait(timeout=30)
    except R.subprocess.TimeoutExpired:
        raise R.Fail("RouteLoop did not stop within 30 s of its stop file", ctx.logs)
    results = [json.loads(t[len("RESULT "):]) for t in R.read_text(loop.stdout).splitlines()
               if t.startswith("RESULT ")]
    R.check(results and results[-1].get("ok"), f"RouteLoop: {results[-1] if results else 'no RESULT'}",
            ctx.logs)
    return results[-1]


def after_restart(result, up_at):
    """(lookups without the broker once the NameServer accepted again, seconds from then to the
    first lookup naming the broker) for one loop."""
    up_ms = up_at * 1000
    later = [(start, code) for start, _end, code in result["lookups"] if start >= up_ms]
    without = sum(1 for _, code in later if code in WITHOUT_BROKER)
    first_ok = next((start for start, code in later if code == 0), None)
    return without, (None if first_ok is None else (first_ok - up_ms) / 1000)


def restart(ctx, procs, key, port, warm):
    """SIGTERM procs[key] and start it again on the same address; returns (down_at, up_at)."""
    down_at = time.time()
    ctx.stop(procs[key], timeout=60)
    procs[key] = start_ns(ctx, key, port, warm)
    return down_at, time.time()


def run_fleet(ctx, variant, warm):
    """One rolling restart; returns its figures."""
    ports = {"namesrv-a": R.free_port(), "namesrv-b": R.free_port()}
    procs = {key: start_ns(ctx, key, port, warm) for key, port in ports.items()}
    fleet = ";".join(p.addr for p in procs.values())
    broker = ctx.start_broker("5", fleet, ctx.uniq("broker-roll"))
    for proc in procs.values():
        ctx.wait_registered(proc.addr, broker)
    topic = ctx.uniq("roll")
    sender = R.start_sender(ctx, fleet, topic, "r", max_s=4 * RESTART_GAP_S + 120)
    R.wait_sends(ctx, sender, 0, 1, 60, "the sender's first successful send")
    for proc in procs.values():
        R.wait_until(f"{topic} in the route of {proc.addr}", 60, 0.2,
                     lambda p=proc: R.ns_route_addrs(p.addr, topic, broker.broker_name))
    loops = {key: start_loop(ctx, proc.addr, topic, broker.broker_name, 4 * RESTART_GAP_S + 60)
             for key, proc in procs.items()}
    for key, loop in loops.items():
        R.wait_until(f"RouteLoop of {key}: its first successful lookup", 60, 0.2,
                     lambda lp=loop: "READY" in R.read_text(lp.stdout).splitlines())
    time.sleep(3)
    windows = {}
    for key in ("namesrv-a", "namesrv-b"):
        windows[key] = restart(ctx, procs, key, ports[key], warm)
        time.sleep(RESTART_GAP_S)
    sent = R.stop_sender(ctx, sender)
    failed_sends = sum(1 for _i, ok, _t, _rest in R.sender_events(sender) if not ok)
    figures = {"variant": variant, "failed_sends": failed_sends, "acknowledged": sent.get("acked"),
               "failed_attempts": sent.get("failedAttempts")}
    for key, loop in loops.items():
        result = loop_result(ctx, loop)
        down_at, up_at = windows[key]
        without, back_after = after_restart(result, up_at)
        figures[key] = {"down_s": round(up_at - down_at, 1), "lookups": len(result["lookups"]),
                        "without_broker_after_restart": without,
                        "route_back_after_s": None if back_after is None else round(back_after, 2)}
    for proc in [*procs.values(), broker]:
        ctx.stop(proc, timeout=30)
    return figures


def s_rolling_restart5(ctx):
    """See the module docs."""
    # The run without warm_restart only gives the figures to compare (README): CI runs the one
    # with the goal, `run.py --long` both.
    plain = [("ours", False)] if R.LONG else []
    variants = [("java", None)] if ctx.mode == "java" else [*plain, ("ours+warm_restart", True)]
    results = []
    for variant, warm in variants:
        figures = run_fleet(ctx, variant, warm)
        print(f"# {ctx.name}: {json.dumps(figures)}", flush=True)
        results.append((warm, figures))
    for warm, figures in results:
        if not warm:
            continue
        for key in ("namesrv-a", "namesrv-b"):
            f = figures[key]
            R.check(f["without_broker_after_restart"] == 0,
                    f"{figures['variant']}: {key} answered {f['without_broker_after_restart']} lookups "
                    f"without the broker after its restart: {figures}", ctx.logs)
        R.check(figures["failed_sends"] == 0, f"{figures['variant']}: failed sends: {figures}", ctx.logs)
