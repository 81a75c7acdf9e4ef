"""Interop scenarios with the RocketMQ Proxy (cluster mode) and the 5.x gRPC SDK.

Where 5.x users run a NameServer: behind `org.apache.rocketmq.proxy.ProxyStartup` in cluster
mode, which looks routes up from the NameServers for its gRPC clients (rocketmq-client-java) and
for remoting clients that take the proxy for their NameServer. run.py loads this module and calls
register(run) with itself; every name of the runner (Ctx, Fail, check, free_port, the TLS and
access helpers, ...) is used as `R.<name>`. Each scenario runs against ours and against the Java
NameServer 5.5.0 (`--namesrv java`), which proves the scenario itself.
"""

import json
import os
import re
import signal
import time

R = None  # the runner module (run.py), set by register()

PROXY_JVM = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
             "-XX:TieredStopAtLevel=1"]
PROXY_MODES = ("ours", "java")
# the broker of the gRPC scenarios: delayed messages need the timer wheel (the suite turns it off)
TIMER = {"timerWheelEnable": "true"}
PROXY_BOOT = "rocketmq-proxy startup successfully"


def register(runner):
    """Adds this module's scenarios to the runner's list (in this order)."""
    global R
    R = runner
    for name, fn in SCENARIOS:
        runner.scenario(name, modes=PROXY_MODES)(fn)


SCENARIOS = []


def scenario(name):
    def add(fn):
        SCENARIOS.append((name, fn))
        return fn
    return add


# ---------------------------------------------------------------------------------------------
# the proxy, the gRPC peer, topics and routes

def lib_classpath(role, version):
    lib = R.CACHE / "lib" / f"{role}-{version}"
    jars = sorted(lib.glob("*.jar"))
    if not jars:
        raise R.Fail(f"{lib} is empty: run interop/setup.sh first")
    return os.pathsep.join(str(j) for j in jars)


def grpc_classpath():
    version = R.VERSIONS["RMQ_GRPC_CLIENT"]
    classes = R.CACHE / "classes" / f"grpc-client-{version}"
    if not (classes / "rmqinterop").is_dir():
        raise R.Fail(f"{classes} missing: run interop/setup.sh first")
    return f"{classes}{os.pathsep}{lib_classpath('grpc-client', version)}"


def start_proxy(ctx, namesrv=None, label="proxy", domain=None, subgroup=None, extra=None, jvm=(), wait=True):
    """Starts the RocketMQ Proxy in cluster mode (`ProxyStartup -pc proxy.json`) with its gRPC and
    remoting ports on free 127.0.0.1 ports, ROCKETMQ_HOME and user.home in its own directory.
    namesrv: its namesrvAddr ("a;b"); or domain "127.0.0.1:PORT" (namesrvDomain, an HTTP address
    server) with subgroup (namesrvDomainSubgroup) and no namesrvAddr anywhere. The proxy
    advertises 127.0.0.1 only (localServeAddr, remotingAccessAddr). Returns the process with
    .grpc and .remoting ("127.0.0.1:PORT"); wait=False: call await_proxy() before using it."""
    home = ctx.home(label)
    grpc, remoting = R.free_port(), R.free_port()
    conf = {
        "rocketMQClusterName": "InteropCluster",
        "proxyMode": "cluster",
        "grpcServerPort": grpc,
        "remotingListenPort": remoting,
        "localServeAddr": "127.0.0.1",
        "remotingAccessAddr": "127.0.0.1",
    }
    if domain:
        conf["namesrvDomain"] = domain
        if subgroup is not None:
            conf["namesrvDomainSubgroup"] = subgroup
    else:
        conf["namesrvAddr"] = namesrv
    conf.update(extra or {})
    path = home / "proxy.json"
    path.write_text(json.dumps(conf, indent=2) + "\n")
    argv = [R.java_bin(), *PROXY_JVM, *jvm, f"-Duser.home={home}", f"-Drocketmq.home.dir={home}",
            "-cp", lib_classpath("proxy", R.VERSIONS["RMQ_PROXY"]),
            "org.apache.rocketmq.proxy.ProxyStartup", "-pc", str(path)]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home, env={"ROCKETMQ_HOME": str(home)})
    proc.grpc = f"127.0.0.1:{grpc}"
    proc.remoting = f"127.0.0.1:{remoting}"
    proc.conf = path
    ctx.logs.append((f"{label} stdout", proc.stdout))
    ctx.logs.append((f"{label} proxy.log", home / "logs" / "rocketmqlogs" / "proxy.log"))
    if wait:
        await_proxy(ctx, proc)
    return proc


def await_proxy(ctx, proc, timeout=90):
    def ready():
        if not proc.alive():
            raise R.Fail(f"{proc.label} exited with {proc.popen.returncode} during start-up", ctx.logs)
        return PROXY_BOOT in R.read_text(proc.stdout) and R.port_open(proc.grpc) and R.port_open(proc.remoting)

    t0 = time.monotonic()
    R.wait_until(f"{proc.label} to start ({PROXY_BOOT!r}, gRPC {proc.grpc} and remoting {proc.remoting} accepting)",
                 timeout, 0.3, ready)
    return time.monotonic() - t0


def grpc(ctx, cmd, proxy, args, timeout_s=60, expect_ok=True):
    """Runs the gRPC SDK peer (GrpcPeer CMD --endpoints <proxy's gRPC port> ARGS); returns its result."""
    return ctx.peer("", "GrpcPeer", [cmd, "--endpoints", proxy.grpc, *args, "--timeout-s", timeout_s],
                    timeout=timeout_s + 60, expect_ok=expect_ok, classpath=grpc_classpath())


def route_brokers(addr, topic):
    """{brokerName: {id: address}} of a topic's route from `addr` (a NameServer, or the proxy's
    remoting port, which answers with its own address), asked raw (GET_ROUTEINFO_BY_TOPIC, JSON
    header); {} when the topic has no route (17); None when nothing answers."""
    try:
        reply, body = R.remoting_call(addr, 105, {"topic": topic})
    except (OSError, ValueError):
        return None
    if reply.get("code") != 0 or not body:
        return {}
    return {bd.get("brokerName"): {str(k): v for k, v in (bd.get("brokerAddrs") or {}).items()}
            for bd in R.fastjson_loads(body).get("brokerDatas") or []}


def raw_route(ns):
    """route(topic) -> the broker names that every NameServer of ns ("a;b") lists in the topic's
    route, asked raw."""
    addrs = ns.split(";")
    return lambda t: set.intersection(*[set(route_brokers(a, t) or {}) for a in addrs])


def wait_routed(what, route, topic, brokers, timeout=60):
    want = {b.broker_name for b in brokers}
    last = {}

    def listed():
        last["got"] = route(topic)
        return want <= last["got"]

    try:
        R.wait_until(f"{what}: the route of {topic} to list {sorted(want)}", timeout, 0.25, listed)
    except R.Fail as e:
        raise R.Fail(f"{e}; last: {sorted(last.get('got') or [])}")


def create_topics(ctx, ns, brokers, topics, route, queues=4, admin_jvm=(), creds=None):
    """Creates each topic ({name: message.type}) on each broker with the 5.5.0 tools
    (createAndUpdateTopicConfig, attribute +message.type), then waits until route(topic) (the
    NameServers' answer: a set of broker names) lists every broker. creds (ak, sk): the tools
    sign everything (a client instance looks TBW102 up at start)."""
    ops = [f"createTopic {b.addr} {t} {queues} message.type={kind}" for t, kind in topics.items() for b in brokers]
    sign = ["--ak", creds[0], "--sk", creds[1]] if creds else []
    results = ctx.peer("5", "Admin", ["--namesrv", ns, *sign, "--batch"], stdin_text="\n".join(ops) + "\n",
                       jvm=admin_jvm)
    R.check(len(results) == len(ops), f"Admin ran {len(results)} of {len(ops)} operations",
            results[0]["_logs"] if results else ctx.logs)
    for op, r in zip(ops, results):
        R.check(r.get("ok"), f"Admin {op}: {R.compact(r)}", r["_logs"] + ctx.logs)
    for t in topics:
        wait_routed(f"NameServer(s) {ns}", route, t, brokers)


def roundtrip(ctx, proxy, topics, consumers=("simple",), prefix="g", delay_ms=3000, first=None):
    """Sends N of each kind through the proxy ({kind: topic}, kinds normal / fifo / delay),
    then each consumer (simple, push) of a fresh group receives all of them. Returns (send
    result, {consumer: result})."""
    n = ctx.count
    args = ["--count", n, "--prefix", prefix]
    for kind, topic in topics.items():
        args += [f"--{kind}", topic]
    if "fifo" in topics:
        args += ["--message-group", ctx.uniq("mg")]
    if "delay" in topics:
        args += ["--delay-ms", delay_ms]
    s = grpc(ctx, "send", proxy, args)
    R.check(s["sent"] == {k: n for k in topics}, f"gRPC send: {R.compact(s)}", s["_logs"])
    got = {}
    for c in consumers:
        r = grpc(ctx, c, proxy, ["--group", ctx.uniq(f"{c}cg"), "--topics", ",".join(topics.values()),
                                 "--count", n * len(topics)])
        R.check(r["perTopic"] == {t: n for t in topics.values()}, f"gRPC {c} consumer: {R.compact(r)}", r["_logs"])
        if "delay" in topics:
            # the broker's timer fires per timerPrecisionMs (1 s) slot: never a slot early
            late = r.get("minDelayLateMs")
            R.check(r["delayed"] == n and late is not None and late > -1000,
                    f"gRPC {c} consumer: delayed messages {r['delayed']}, earliest {late} ms from its delivery "
                    f"time: {R.compact(r)}", r["_logs"])
        got[c] = r
    return s, got


def start_namesrv(ctx, label="namesrv", http=False):
    """The NameServer under test; ours with --http-listen (proc.http) when http is set."""
    if ctx.mode == "ours" and http:
        http_addr = f"127.0.0.1:{R.free_port()}"
        ns = ctx._start_ours(label, extra_args=["--http-listen", http_addr])
        ns.http = http_addr
        R.wait_until(f"our HTTP port {http_addr}", 10, 0.1, lambda: R.port_open(http_addr))
        return ns
    ns = ctx.start_namesrv(label)
    ns.http = None
    return ns


def requests_delta(ns, before):
    """Requests our server answered since `before` (ours_requests), by name; {} for Java."""
    if not ns.http:
        return {}
    now = R.ours_requests(ns.http)
    return {k: int(v - before.get(k, 0)) for k, v in sorted(now.items()) if v - before.get(k, 0) > 0}


def proxy_setup(ctx, ns_addr, route, brokers=("broker-px",), broker_extra=None, broker_jvm=(), proxy_kw=None):
    """5.5.0 brokers (timer wheel on: the proxy's consumers pop, which needs it), started side by
    side and registering with ns_addr, then the proxy. The proxy starts only once route() of the
    cluster's own topic lists every broker: at start it creates its heartbeat-sync topic on the
    cluster's brokers, which it finds by that route, and exits (1) when there is none. Returns
    (proxy, [brokers])."""
    t0 = time.monotonic()
    started = [ctx.start_broker("5", ns_addr, b, extra={**TIMER, **(broker_extra or {})}, jvm=broker_jvm, wait=False)
               for b in brokers]
    for b in started:
        ctx.await_broker(b)
    booted = time.monotonic() - t0
    wait_routed("broker registration", route, "InteropCluster", started, timeout=90)
    registered = time.monotonic() - t0
    proxy = start_proxy(ctx, ns_addr, **(proxy_kw or {}))
    print(f"# {ctx.name}: broker(s) booted in {booted:.1f} s, registered after {registered:.1f} s; proxy gRPC "
          f"{proxy.grpc}, remoting {proxy.remoting} ready after {time.monotonic() - t0:.1f} s", flush=True)
    return proxy, started


# ---------------------------------------------------------------------------------------------
# scenarios

@scenario("proxy-grpc5")
def s_proxy_grpc(ctx):
    """The 5.x gRPC SDK through the proxy: normal, FIFO (one message group) and delayed messages
    (the broker's timer wheel on) sent through the proxy's gRPC port; a SimpleConsumer and a
    PushConsumer of fresh groups each receive all of them (delayed ones not before their delivery
    time). Ours: the requests the NameServer answered during the gRPC part are printed."""
    ns = start_namesrv(ctx, http=True)
    route = raw_route(ns.addr)
    proxy, (broker,) = proxy_setup(ctx, ns.addr, route)
    topics = {k: ctx.uniq(f"px{k}") for k in ("normal", "fifo", "delay")}
    create_topics(ctx, ns.addr, [broker], {topics["normal"]: "NORMAL", topics["fifo"]: "FIFO",
                                           topics["delay"]: "DELAY"}, route)
    before = R.ours_requests(ns.http) if ns.http else {}
    s, got = roundtrip(ctx, proxy, topics, consumers=("simple", "push"))
    R.check(all(v == {broker.broker_name: ctx.count} for v in s["brokers"].values()),
            f"gRPC send receipts name brokers {s['brokers']}", s["_logs"])
    print(f"# {ctx.name}: gRPC sent {ctx.count} normal, FIFO and delayed ({s['elapsedMs']} ms, "
          f"{sum(s['failedAttempts'].values())} failed attempts); simple consumer {got['simple']['received']} in "
          f"{got['simple']['elapsedMs']} ms, push consumer {got['push']['received']} in {got['push']['elapsedMs']} ms; "
          f"delayed messages at the earliest {got['simple']['minDelayLateMs']} / {got['push']['minDelayLateMs']} "
          f"ms after their delivery time; FIFO group in send order: simple {got['simple']['fifoInOrder']}, "
          f"push {got['push']['fifoInOrder']}", flush=True)
    if ns.http:
        print(f"# {ctx.name}: our server answered during the gRPC part (proxy and broker): "
              f"{requests_delta(ns, before)}", flush=True)


@scenario("proxy-remoting5")
def s_proxy_remoting(ctx):
    """The proxy's own remoting port as the NameServer of a 5.5.0 remoting client: the proxy
    answers GET_ROUTEINFO_BY_TOPIC itself, naming itself as every broker's address; a producer
    sends N and a push consumer receives them through the proxy; a missing topic is code 17 as
    from a NameServer."""
    ns = start_namesrv(ctx)
    route = raw_route(ns.addr)
    proxy, (broker,) = proxy_setup(ctx, ns.addr, route)
    topic = ctx.uniq("pxremoting")
    create_topics(ctx, ns.addr, [broker], {topic: "NORMAL"}, route)
    n = ctx.count
    r = ctx.peer("5", "RouteProbe", ["--namesrv", proxy.remoting, "--topic", topic, "--brokers", broker.broker_name,
                                     "--wait-s", 30])
    R.check(R.route_addrs(r, broker.broker_name) == {"0": proxy.remoting},
            f"the proxy's route of {topic} should name the proxy ({proxy.remoting}) as {broker.broker_name}: "
            f"{R.compact(r)}", r["_logs"])
    r = ctx.peer("5", "Producer", ["--namesrv", proxy.remoting, "--topic", topic, "--count", n, "--prefix", "p"])
    R.check(r["succeeded"] == n and r["brokers"] == [broker.broker_name], f"producer: {R.compact(r)}", r["_logs"])
    ctx.peer("5", "Consumer", ["--namesrv", proxy.remoting, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", n, "--prefix", "p", "--timeout-s", 60])
    r = ctx.peer("5", "RouteProbe", ["--namesrv", proxy.remoting, "--topic", ctx.uniq("missing"),
                                     "--expect", "missing"])
    R.check(r["code"] == 17, f"missing topic through the proxy: expected code 17, got {R.compact(r)}", r["_logs"])
    print(f"# {ctx.name}: the proxy's route names it ({proxy.remoting}) for {broker.broker_name} "
          f"({broker.addr}); {n} produced and consumed through its remoting port", flush=True)


def wait_route_change(what, addr, topic, broker_name, present, since, timeout):
    """Polls the route of topic on addr (every 100 ms) until broker_name is (present) or is not
    in it; returns seconds from `since` (time.monotonic())."""
    last = {}

    def reached():
        route = route_brokers(addr, topic)
        last["route"] = route
        return route is not None and (broker_name in route) == present

    try:
        R.wait_until(what, timeout, 0.1, reached)
    except R.Fail as e:
        raise R.Fail(f"{e}; last route: {last.get('route')}")
    return time.monotonic() - since


@scenario("proxy-broker-restart5")
def s_proxy_broker_restart(ctx):
    """Two 5.5.0 brokers hold a topic; SIGKILL one: the proxy's route (asked on its remoting port)
    drops it (time printed, with the NameServer's own time) and gRPC sends all go to the other;
    restart it (same store and ports): the proxy routes to it again (times printed) and a
    fresh gRPC producer's sends reach it. The proxy refreshes a cached route 20 s after loading
    it (topicRouteServiceCacheRefreshSeconds), on the next lookup."""
    ns = start_namesrv(ctx)
    route = raw_route(ns.addr)
    proxy, (a, b) = proxy_setup(ctx, ns.addr, route, brokers=("broker-pa", "broker-pb"))
    topic = ctx.uniq("pxkill")
    create_topics(ctx, ns.addr, [a, b], {topic: "NORMAL"}, route)
    wait_route_change("the proxy's route to list broker-pa", proxy.remoting, topic, a.broker_name, True,
                      time.monotonic(), 30)
    t_kill = time.monotonic()
    ctx.stop(a, signal.SIGKILL, timeout=10)
    ns_gone = wait_route_change(f"the NameServer to drop {a.broker_name}", ns.addr, topic, a.broker_name, False,
                                t_kill, 30)
    proxy_gone = wait_route_change(f"the proxy to drop {a.broker_name}", proxy.remoting, topic, a.broker_name, False,
                                   t_kill, 60)
    s = grpc(ctx, "send", proxy, ["--count", ctx.count, "--prefix", "k", "--normal", topic])
    R.check(s["brokers"]["normal"] == {b.broker_name: ctx.count},
            f"gRPC sends while {a.broker_name} is down: {R.compact(s)}", s["_logs"])
    t_restart = time.monotonic()
    a = ctx.restart_broker(a)
    booted = time.monotonic() - t_restart
    ns_back = wait_route_change(f"the NameServer to list {a.broker_name} again", ns.addr, topic, a.broker_name, True,
                                t_restart, 60)
    proxy_back = wait_route_change(f"the proxy to list {a.broker_name} again", proxy.remoting, topic, a.broker_name,
                                   True, t_restart, 60)
    s2 = grpc(ctx, "send", proxy, ["--count", ctx.count, "--prefix", "r", "--normal", topic])
    R.check(s2["brokers"]["normal"].get(a.broker_name, 0) > 0,
            f"no gRPC send reached the restarted {a.broker_name}: {R.compact(s2)}", s2["_logs"])
    r = grpc(ctx, "simple", proxy, ["--group", ctx.uniq("simplecg"), "--topics", topic, "--count", 2 * ctx.count])
    print(f"# {ctx.name}: SIGKILL {a.broker_name}: NameServer route without it after {ns_gone:.1f} s, the proxy's "
          f"after {proxy_gone:.1f} s; {ctx.count} gRPC sends meanwhile all to {b.broker_name} "
          f"({s['failedAttempts']['normal']} failed attempts); restarted (boot {booted:.1f} s): NameServer route "
          f"with it after {ns_back:.1f} s, the proxy's after {proxy_back:.1f} s; then {s2['brokers']['normal']}; "
          f"simple consumer read {r['received']}", flush=True)


@scenario("proxy-namesrv-failover5")
def s_proxy_namesrv_failover(ctx):
    """Two NameServers A and B (proxy and broker given A;B); gRPC sends through the proxy; SIGKILL
    A; the proxy keeps working through B: sends to the same topic and to a topic it has not
    looked up yet (created after the kill, so the proxy must ask B) succeed, and a simple
    consumer reads all."""
    a = start_namesrv(ctx, "namesrv-a")
    b = start_namesrv(ctx, "namesrv-b")
    both = f"{a.addr};{b.addr}"
    proxy, (broker,) = proxy_setup(ctx, both, raw_route(both))
    t1 = ctx.uniq("pxfail")
    create_topics(ctx, both, [broker], {t1: "NORMAL"}, raw_route(both))
    n = ctx.count
    grpc(ctx, "send", proxy, ["--count", n, "--prefix", "before", "--normal", t1])
    ctx.stop(a, signal.SIGKILL, timeout=10)
    t2 = ctx.uniq("pxfail")
    create_topics(ctx, b.addr, [broker], {t2: "NORMAL"}, raw_route(b.addr))
    s = grpc(ctx, "send", proxy, ["--count", n, "--prefix", "after", "--normal", t1])
    s2 = grpc(ctx, "send", proxy, ["--count", n, "--prefix", "new", "--normal", t2])
    r = grpc(ctx, "simple", proxy, ["--group", ctx.uniq("simplecg"), "--topics", f"{t1},{t2}", "--count", 3 * n])
    R.check(r["perTopic"] == {t1: 2 * n, t2: n}, f"simple consumer after the kill: {R.compact(r)}", r["_logs"])
    print(f"# {ctx.name}: after SIGKILL of A: {n} sends to the known topic ({s['failedAttempts']['normal']} failed "
          f"attempts, {s['buildAttempts']} producer start(s)), {n} to a new topic ({s2['failedAttempts']['normal']} "
          f"failed, {s2['buildAttempts']} start(s): errors {s2['errors'][:2]}); consumer read {r['received']}",
          flush=True)


@scenario("proxy-nsaddr5")
def s_proxy_nsaddr(ctx):
    """The proxy with namesrvDomain (our HTTP address server, /rocketmq/nsaddr) instead of a
    namesrvAddr: it fetches the NameServer list (its log shows the change from null) and serves
    gRPC sends and a simple consumer. Against Java the list names the Java NameServer, served by
    an extra server of ours that is only the address server ([http] nsaddr)."""
    http_addr = f"127.0.0.1:{R.free_port()}"
    if ctx.mode == "ours":
        ns = ctx._start_ours("namesrv", extra_args=["--http-listen", http_addr])
    else:
        ns = ctx.start_namesrv()
        home = ctx.dir / "address-server-config"
        home.mkdir(parents=True, exist_ok=True)
        (home / "namesrv.toml").write_text(f'[http]\nnsaddr = "{ns.addr}"\n')
        ctx._start_ours("address-server", config=home / "namesrv.toml", extra_args=["--http-listen", http_addr])
    R.wait_until(f"our HTTP port {http_addr}", 10, 0.1, lambda: R.port_open(http_addr))
    R.check_nsaddr_body(http_addr, "/rocketmq/nsaddr", [ns.addr], ctx.logs)
    # the proxy's default namesrvDomainSubgroup is "" (Java then asks /rocketmq/ itself)
    R.check_nsaddr_body(http_addr, "/rocketmq/", [ns.addr], ctx.logs)
    route = raw_route(ns.addr)
    proxy, (broker,) = proxy_setup(ctx, ns.addr, route, proxy_kw={"domain": http_addr, "subgroup": "nsaddr"})
    conf = json.loads(R.read_text(proxy.conf))
    R.check("namesrvAddr" not in conf, f"proxy.json has a namesrvAddr: {conf}")
    environ = (R.Path(f"/proc/{proxy.pid}/environ").read_bytes().split(b"\0"))
    R.check(not any(e.startswith(b"NAMESRV_ADDR=") for e in environ), "NAMESRV_ADDR in the proxy's environment")
    topic = ctx.uniq("pxnsaddr")
    create_topics(ctx, ns.addr, [broker], {topic: "NORMAL"}, route)
    roundtrip(ctx, proxy, {"normal": topic})
    changed = re.findall(r"name server address changed, old=(\S+), new=(\S+)", R.java_logs_text(proxy.home))
    R.check(changed and changed[0] == ("null", ns.addr),
            f"the proxy's log does not show {ns.addr} fetched from the address server (found {changed[:3]})",
            ctx.logs)
    print(f"# {ctx.name}: the proxy (namesrvDomain={http_addr}, namesrvDomainSubgroup=nsaddr) fetched {ns.addr} "
          f"({len(changed)} client(s) logged the change) and served {ctx.count} gRPC sends and receives; "
          f"GET /rocketmq/ (the proxy's default subgroup \"\") answers the list too", flush=True)


@scenario("proxy-tls5")
def s_proxy_tls(ctx):
    """The NameServer in TLS enforcing mode (Java's tls.* names); the broker and the proxy with
    Java's TLS client properties (-Dtls.enable=true, verifying the CA) and a CA-signed certificate
    on their own permissive ports; gRPC (plaintext to the proxy) sends and a simple consumer
    receives N. Ours: no failed handshake and no plaintext connection refused."""
    certs = R.make_certs(ctx)
    ns = ctx.start_namesrv(tls=R.tls_server_props(certs, "enforcing"), tls_form="properties")
    tls_jvm = R.dedup_flags(R.java_tls_client(certs) + R.java_tls_broker_port(certs))

    def tls_route(t):
        # the 5.5.0 client's own lookup over TLS (verifying the CA), repeated for up to 30 s
        r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", t, "--wait-s", 30], expect_ok=False,
                     jvm=R.java_tls_client(certs))
        return {x["name"] for x in r.get("brokers") or []}

    proxy, (broker,) = proxy_setup(ctx, ns.addr, tls_route, broker_jvm=tls_jvm, proxy_kw={"jvm": tls_jvm})
    topic = ctx.uniq("pxtls")
    create_topics(ctx, ns.addr, [broker], {topic: "NORMAL"}, tls_route, admin_jvm=R.java_tls_client(certs))
    roundtrip(ctx, proxy, {"normal": topic})
    opened = sum(R.read_text(p).count("Prepend SSL handler") for p in (proxy.home / "logs").rglob("*.log"))
    R.check(opened >= 1, "the proxy's logs show no TLS connection it opened", ctx.logs)
    if ns.kind == "ours":
        log = R.ours_log(ns)
        R.check(not R.handshake_failures(ns) and "plaintext connection refused" not in log,
                f"our server logged failed handshakes {R.handshake_failures(ns)[:3]} or refused plaintext", ctx.logs)
    print(f"# {ctx.name}: the proxy opened {opened} TLS connection(s) "
          f"(NameServer and broker); {ctx.count} gRPC sends and receives", flush=True)


@scenario("proxy-acl5")
def s_proxy_acl(ctx):
    """Our server in the secure access profile with reads signed ([access.read] policy
    "signed"); the broker signs with innerClientAuthenticationCredentials, the proxy with
    enableAclRpcHookForClusterMode and innerClientAuthenticationCredentials (its
    AclClientRPCHook signs every request to NameServers and brokers): gRPC sends and a simple
    consumer work; an unsigned route lookup is refused (16 no signature); /metrics counts that
    one refusal and no other. Against Java (no access control) the same proxy simply works."""
    proxy_ak, proxy_sk = "interopProxy", R.acl_secret("proxySk")
    broker_ak, broker_sk = "interopBroker", R.acl_secret("brokerSk")
    creds = json.dumps({"accessKey": proxy_ak, "secretKey": proxy_sk}, separators=(",", ":"))
    proxy_kw = {"extra": {"enableAclRpcHookForClusterMode": True, "innerClientAuthenticationCredentials": creds}}
    if ctx.mode == "ours":
        cfg = ctx.dir / "access"
        cfg.mkdir(parents=True, exist_ok=True)
        acl = cfg / "plain_acl.yml"
        R.write_acl_file(acl, accounts=[(proxy_ak, proxy_sk, False), (broker_ak, broker_sk, False)])
        http_addr = f"127.0.0.1:{R.free_port()}"
        ns = R.start_ours_access(ctx, "namesrv", R.access_toml(profile="secure", acl_file=acl, max_failures=100000,
                                                               classes={"read": ("signed", [])}),
                                 extra_args=["--http-listen", http_addr])
        R.wait_until(f"our HTTP port {http_addr}", 10, 0.1, lambda: R.port_open(http_addr))
    else:
        ns, http_addr = ctx.start_namesrv(), None

    def signed_route(t):
        # route present: a signed raw lookup answers 0 (the header only; one broker here)
        reply = R.raw_request(ns.addr, 105, {"topic": t}, access_key=broker_ak, secret=broker_sk)
        return {"broker-px"} if reply.get("code") == 0 else set()

    proxy, (broker,) = proxy_setup(ctx, ns.addr, signed_route, broker_extra=R.broker_signing(broker_ak, broker_sk),
                                   proxy_kw=proxy_kw)
    topic = ctx.uniq("pxacl")
    create_topics(ctx, ns.addr, [broker], {topic: "NORMAL"}, signed_route, creds=(broker_ak, broker_sk))
    roundtrip(ctx, proxy, {"normal": topic})
    if http_addr:
        reply = R.raw_request(ns.addr, 105, {"topic": topic})
        R.check(reply.get("code") == 16 and "no signature" in (reply.get("remark") or ""),
                f"an unsigned route lookup was not refused: {reply}", ctx.logs)
        got = R.access_refusals(http_addr)
        R.check(got == {("read", "no_signature"): 1},
                f"refusals {sorted(got.items())}: the proxy or the broker sent an unsigned or badly signed request",
                ctx.logs)
        lookups = R.ours_requests(http_addr).get("GET_ROUTEINFO_BY_TOPIC", 0)
        leaks = R.secrets_leaked({"proxy secret": proxy_sk, "broker secret": broker_sk}, [ns.stderr])
        R.check(not leaks, f"secrets in our server's log: {leaks}", ctx.logs)
        print(f"# {ctx.name}: reads signed: {lookups:g} route lookups answered (the proxy's among them), only the "
              f"provoked unsigned one refused", flush=True)
