"""Interop scenarios of a real 5.5.0 broker that carries tens of thousands of topics (issue 26).

The runner generates the broker's `config/topics.json` (the format of Java's `TopicConfigManager`:
a `TopicConfigSerializeWrapper` with `dataVersion` and `topicConfigTable`) in the scenario's
directory, starts a 5.5.0 broker on that store and watches it register, then re-register every
`registerNameServerPeriod` (10 s, the broker's minimum). `--namesrv ours` runs our server and the
Java NameServer 5.5.0 side by side (the broker registers with both) and compares the sampled
routes of the two; `--namesrv java` runs the Java NameServer alone, which proves the scenario and
gives Java's own registration time. Sizes: the issue's (100,000 split, 30,000 plain) by default,
in CI too (each scenario takes under a minute); `run.py --long` (R.LONG) runs the split one at
300,000 topics.

run.py loads this module and calls register(run) with itself; the runner's names are used as
`R.<name>`.
"""

import json
import random
import re
import sys
import time

R = None  # the runner module (run.py), set by register()

MODES = ("ours", "java")
# topics of the generated store: (default and CI size, --long size)
SPLIT_TOPICS = (100_000, 300_000)
PLAIN_TOPICS = (30_000, 30_000)
# the broker's splitRegistrationSize (Java's default): topics per REGISTER_BROKER of a split round
SPLIT_SIZE = 800
# registerNameServerPeriod: the broker clamps it to [10 s, 60 s]; the lowest keeps rounds short
PERIOD_S = 10
ROUNDS = 2  # re-registration rounds watched after the first registration
SAMPLE = 200  # random topics whose routes are compared (plus the first and the last)
# the route request of a 5.5.0 client (its header `version`)
CLIENT_VERSION = 513
JAVA_NAMESRV_HEAP = ["-Xms256m", "-Xmx1g"]
COMPLETED = "Registering current broker to name server completed. TargetHost="
FAILED = ("Failed to register current broker to name server", "does NOT complete within deadline")


def register(runner):
    """Adds this module's scenarios to the runner's list."""
    global R
    R = runner
    R.scenario("broker5-big-split", modes=MODES)(s_big_split)
    R.scenario("broker5-big-plain", modes=MODES)(s_big_plain)


def s_big_split(ctx):
    """A 5.5.0 broker with `enableSplitRegistration=true` and 100,000 topics (300,000 with
    --long): each round is topics / splitRegistrationSize + 1 REGISTER_BROKER requests of 800
    topics each, the same data version in all."""
    big_registration(ctx, SPLIT_TOPICS[1] if R.LONG else SPLIT_TOPICS[0], split=True)


def s_big_plain(ctx):
    """The same broker registering plainly (one REGISTER_BROKER of every topic per round): 30,000
    topics (a 5.6 MB body; 100,000 would pass the 16 MiB frame limit of both servers)."""
    big_registration(ctx, PLAIN_TOPICS[1] if R.LONG else PLAIN_TOPICS[0], split=False)


# ---------------------------------------------------------------------------------------------
# the store


def topic_configs(n, seed):
    """n topic configs, deterministic for a seed: varied names, queue counts and permissions."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_-"
    table = {}
    for i in range(n):
        name = f"big_{i:06d}_" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        read = rng.choice((1, 2, 4, 8, 16))
        write = read if rng.random() < 0.9 else max(1, read // 2)
        perm = rng.choices((6, 4, 2), weights=(90, 5, 5))[0]
        table[name] = {"attributes": {}, "order": False, "perm": perm, "readQueueNums": read,
                       "topicFilterType": "SINGLE_TAG", "topicName": name, "topicSysFlag": 0,
                       "writeQueueNums": write}
    return table


def write_store(store, table):
    """The broker store's config/topics.json as TopicConfigManager persists it."""
    config = store / "config"
    config.mkdir(parents=True, exist_ok=True)
    doc = {"dataVersion": {"counter": 1, "stateVersion": 0, "timestamp": int(time.time() * 1000)},
           "topicConfigTable": table}
    text = json.dumps(doc, separators=(",", ":"))
    (config / "topics.json").write_text(text)
    return len(text)


# ---------------------------------------------------------------------------------------------
# asking the NameServers


def diff_module():
    if str(R.HERE) not in sys.path:
        sys.path.insert(0, str(R.HERE))
    sys.dont_write_bytecode = True  # no interop/__pycache__
    import diff
    return diff


def ask(conn, code, ext=None, opaque=1, timeout=60):
    """One JSON request on a diff.Conn; returns the reply frame."""
    d = diff_module()
    conn.send(d.encode_request(d.JSON, code, opaque, ext or {}, version=CLIENT_VERSION))
    frame = conn.read_frame(timeout=timeout)
    R.check(frame.opaque == opaque, f"{conn.addr}: reply opaque {frame.opaque}, asked {opaque}")
    return frame


def topic_list(addr):
    """The topics GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) lists, as a set; None when the server
    does not answer it."""
    d = diff_module()
    try:
        conn = d.Conn(addr, timeout=60)
    except OSError:
        return None
    try:
        frame = ask(conn, 206)
    except (OSError, ValueError, d.Closed):
        return None
    finally:
        conn.close()
    if frame.code != 0 or not frame.body:
        return None
    return set(json.loads(frame.body).get("topicList") or ())


def rss_mib(pid):
    """(VmRSS, VmHWM) of a process in MiB, from /proc."""
    values = {}
    try:
        for line in R.read_text(f"/proc/{pid}/status").splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def register_metrics(http_addr):
    """(REGISTER_BROKER requests answered, their seconds in total) from our /metrics."""
    status, _, text = R.http_get(http_addr, "/metrics")
    if status != 200:
        raise R.Fail(f"GET /metrics on {http_addr}: {status}")
    count = total = 0.0
    pattern = r'^rmq_namesrv_request_duration_seconds_(sum|count)\{([^}]*)\}\s+(\S+)$'
    for m in re.finditer(pattern, text, re.M):
        if 'request="REGISTER_BROKER"' in m.group(2):
            if m.group(1) == "sum":
                total += float(m.group(3))
            else:
                count += float(m.group(3))
    return int(count), total


def registrations_logged(broker):
    """{target address: REGISTER_BROKER requests the broker logged as completed}, and the
    broker log's lines that report a failed or late registration."""
    text = R.read_text(broker.log)
    done = {}
    for m in re.finditer(re.escape(COMPLETED) + r"(\S+)", text):
        done[m.group(1)] = done.get(m.group(1), 0) + 1
    failed = [line for line in text.splitlines() if any(f in line for f in FAILED)]
    return done, failed


# ---------------------------------------------------------------------------------------------
# the scenario


def start_servers(ctx):
    """[(name, proc)]: ours and Java's with --namesrv ours, Java's alone with --namesrv java."""
    servers = []
    if ctx.mode == "ours":
        http_addr = f"127.0.0.1:{R.free_port()}"
        ours = ctx._start_ours("namesrv", extra_args=["--http-listen", http_addr])
        ours.http = http_addr
        servers.append(("ours", ours))
    java = ctx._start_java_namesrv("namesrv-java", "5", jvm=JAVA_NAMESRV_HEAP)
    java.http = None
    servers.append(("java", java))
    return servers


def big_registration(ctx, n, split):
    """Generates n topics, starts the servers and the broker, and checks registration, routes
    and re-registration rounds (see the module's docstring)."""
    table = topic_configs(n, seed=n)
    store = ctx.dir / "broker-store"
    size = write_store(store, table)
    servers = start_servers(ctx)
    extra = {"storePathRootDir": store, "storePathCommitLog": store / "commitlog",
             "registerNameServerPeriod": PERIOD_S * 1000,
             "enableSplitRegistration": "true" if split else "false",
             "splitRegistrationSize": SPLIT_SIZE}
    addrs = ";".join(proc.addr for _, proc in servers)
    broker = ctx.start_broker("5", addrs, ctx.uniq("broker-big"), extra=extra, wait=False)
    t0 = time.monotonic()
    kind = "split" if split else "plain"
    print(f"# {ctx.name}: {n} topics ({kind}), topics.json {size / 1e6:.1f} MB, servers "
          f"{', '.join(name for name, _ in servers)}", flush=True)
    bound = 300 if n > 50_000 else 120
    totals = wait_listed(ctx, servers, broker, set(table), t0, bound)
    ctx._await_boot(broker, "boot success", bound)
    print(f"# {ctx.name}: broker boot success {time.monotonic() - t0:.1f} s after its start", flush=True)
    report_memory(ctx, servers, "after the first registration")
    compare_routes(ctx, servers, broker, table)
    per_round = {name: (totals[name] // SPLIT_SIZE + 1) if split else 1 for name, _ in servers}
    watch_rounds(ctx, servers, broker, set(table), per_round)
    compare_routes(ctx, servers, broker, table)
    report_memory(ctx, servers, f"after {ROUNDS} more rounds")


def wait_listed(ctx, servers, broker, names, t0, bound):
    """Polls every server's topic list until it holds all `names`; prints the time from the
    broker's start for each. Returns {server: topics listed}."""
    pending = {name: proc for name, proc in servers}
    totals = {}
    deadline = t0 + bound
    while pending:
        if not broker.alive():
            raise R.Fail(f"the broker exited with {broker.popen.returncode} while registering", ctx.logs)
        if time.monotonic() > deadline:
            raise R.Fail(f"not every topic listed {bound} s after the broker's start: "
                         f"{ {name: len(names & (topic_list(p.addr) or set())) for name, p in pending.items()} }"
                         f" of {len(names)}", ctx.logs)
        for name, proc in list(pending.items()):
            listed = topic_list(proc.addr) or set()
            if names <= listed:
                totals[name] = len(listed)
                print(f"# {ctx.name}: {name} lists all {len(names)} topics ({len(listed)} with the broker's "
                      f"system topics) {time.monotonic() - t0:.1f} s after the broker's start", flush=True)
                del pending[name]
        time.sleep(0.5)
    return totals


def report_memory(ctx, servers, when):
    parts = []
    for name, proc in servers:
        rss, hwm = rss_mib(proc.popen.pid)
        parts.append(f"{name} RSS {rss:.0f} MiB (peak {hwm:.0f})")
        if proc.http:
            count, seconds = register_metrics(proc.http)
            before = getattr(proc, "registered", (0, 0.0))
            proc.registered = (count, seconds)
            parts.append(f"ours answered {count - before[0]} REGISTER_BROKER in {seconds - before[1]:.3f} s "
                         f"(server time) since the last report")
    print(f"# {ctx.name}: {when}: {'; '.join(parts)}", flush=True)


def expected_route(cluster, broker, config):
    """What the route of a generated topic must hold (as decoded, bare keys quoted)."""
    queue = {"brokerName": broker.broker_name, "perm": config["perm"],
             "readQueueNums": config["readQueueNums"], "writeQueueNums": config["writeQueueNums"],
             "topicSysFlag": 0}
    return {"brokerAddrs": {"0": broker.addr}, "brokerName": broker.broker_name, "cluster": cluster}, queue


def sampled_topics(table):
    names = sorted(table)
    rng = random.Random(len(names))
    return [names[0], names[-1], *rng.sample(names[1:-1], min(SAMPLE, len(names) - 2))]


def compare_routes(ctx, servers, broker, table):
    """Routes of the sample (first, last and SAMPLE random topics): each server's must name the
    broker with the topic's queue data, and ours must equal Java's as decoded."""
    d = diff_module()
    sample = sampled_topics(table)
    conns = {name: d.Conn(proc.addr, timeout=30) for name, proc in servers}
    t0 = time.monotonic()
    same_bytes = 0
    try:
        for i, topic in enumerate(sample):
            bodies = {}
            for name, conn in conns.items():
                frame = ask(conn, 105, {"topic": topic}, opaque=i + 1)
                R.check(frame.code == 0, f"{name}: route of {topic}: code {frame.code} {frame.remark!r}", ctx.logs)
                bodies[name] = frame.body
                check_route(ctx, name, topic, d.normalize_body("route", frame.body), broker, table[topic])
            if len(bodies) == 2:
                ours, java = (d.normalize_body("route", bodies[k]) for k in ("ours", "java"))
                R.check(ours == java, f"route of {topic}: ours differs from Java's: {d.delta(java, ours)}", ctx.logs)
                same_bytes += bodies["ours"] == bodies["java"]
    finally:
        for conn in conns.values():
            conn.close()
    note = f"; {same_bytes} byte for byte the same as Java's" if len(servers) == 2 else ""
    print(f"# {ctx.name}: {len(sample)} sampled routes as expected from {', '.join(conns)} "
          f"({time.monotonic() - t0:.1f} s){note}", flush=True)


def check_route(ctx, name, topic, route, broker, config):
    want_broker, want_queue = expected_route("InteropCluster", broker, config)
    datas = route.get("brokerDatas") or []
    got = [{k: b.get(k) for k in want_broker} for b in datas]
    R.check(got == [want_broker], f"{name}: route of {topic}: brokerDatas {datas}, want {want_broker}", ctx.logs)
    queues = route.get("queueDatas") or []
    got = [{k: q.get(k) for k in want_queue} for q in queues]
    R.check(got == [want_queue], f"{name}: route of {topic}: queueDatas {queues}, want {want_queue}", ctx.logs)


def watch_rounds(ctx, servers, broker, names, per_round):
    """Waits for ROUNDS more registration rounds to every server (counted in the broker's log),
    polling the topic lists meanwhile: no topic may be missing at any poll."""
    base, _ = registrations_logged(broker)
    want = {proc.addr: base.get(proc.addr, 0) + ROUNDS * per_round[name] for name, proc in servers}
    fewest = {name: len(names) for name, _ in servers}
    t0 = time.monotonic()
    deadline = t0 + (ROUNDS + 1) * PERIOD_S + 60
    polls = 0
    while True:
        done, failed = registrations_logged(broker)
        R.check(not failed, f"the broker logged failed registrations: {failed[:3]}", ctx.logs)
        if all(done.get(addr, 0) >= count for addr, count in want.items()):
            break
        if time.monotonic() > deadline:
            raise R.Fail(f"{ROUNDS} more registration rounds not seen in {deadline - t0:.0f} s: "
                         f"completed {done}, waiting for {want}", ctx.logs)
        for name, proc in servers:
            listed = topic_list(proc.addr)
            R.check(listed is not None, f"{name} did not answer the topic list", ctx.logs)
            fewest[name] = min(fewest[name], len(names & listed))
        polls += 1
        time.sleep(1)
    print(f"# {ctx.name}: {ROUNDS} re-registration rounds ({', '.join(f'{v} requests to {k}' for k, v in per_round.items())}"
          f" per round) in {time.monotonic() - t0:.1f} s; {polls} polls of every topic list, fewest of the "
          f"{len(names)} topics listed: {fewest}", flush=True)
    lists = {}
    for name, proc in servers:
        listed = lists[name] = topic_list(proc.addr) or set()
        R.check(fewest[name] == len(names) and names <= listed,
                f"{name} lost topics during re-registration: fewest {fewest[name]}, now "
                f"{len(names & listed)} of {len(names)}", ctx.logs)
    if len(lists) == 2:
        R.check(lists["ours"] == lists["java"],
                f"topic lists differ: only ours {sorted(lists['ours'] - lists['java'])[:5]}, "
                f"only Java's {sorted(lists['java'] - lists['ours'])[:5]}", ctx.logs)
        print(f"# {ctx.name}: ours and Java list the same {len(lists['ours'])} topics", flush=True)
