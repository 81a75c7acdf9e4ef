#!/usr/bin/env python3
"""Partition testing of our NameServer's embedded controller (issue 27): a three-member etcd,
two of our NameServers with the controller and the KV on that etcd, two 5.5.0 broker groups in
controller mode (master + slave, allAckInSyncStateSet=true) and a 5.5.0 Java producer, each node
in a network namespace of its own; faults on a seeded schedule; a checker over the recorded
history (check.py). See bench/chaos/README.md.

    bench/chaos/run.py --ci                # 4 faults, about 2.5 minutes (test-all.sh)
    bench/chaos/run.py                     # each of the 8 faults once (about 4 minutes)
    bench/chaos/run.py --faults leader-broker-cut,ns-pause   # only these
    bench/chaos/run.py --controller java   # the same against Java 5.5.0's DLedger controller
    bench/chaos/run.py --duration 30m      # the schedule repeated (reshuffled) for 30 minutes
    bench/chaos/run.py --seed 7 --binary target/release/rmq-namesrv --keep

Needs root (network namespaces, iptables), ip, iptables, etcd, Java 17 and the interop cache
(interop/setup.sh). Re-executes itself in a fresh network namespace (unshare --net) so that the
bridge and every address exist only there. Exit 0 when the checker finds no violation."""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True

import check  # noqa: E402
import faults  # noqa: E402
from cluster import GROUPS, NS_PORT, Cluster, interop, wait_for  # noqa: E402
from net import Net  # noqa: E402
from recorder import Recorder, call, parse  # noqa: E402

CONVERGE_BOUND_S = 30.0
STEADY_TIMEOUT_S = 90.0


def parse_duration(text):
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"--duration {text!r}: expected e.g. 90s, 30m, 1h")


def parse_faults(text):
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in faults.BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--faults {text!r}: unknown {unknown}; known: {', '.join(faults.BY_NAME)}")
    return names


class Env:
    """What the faults see: the network, the processes, and live questions about them."""

    def __init__(self, net, cluster, topic):
        self.net, self.cluster, self.topic = net, cluster, topic

    def ctl_addr(self, ns):
        return f"{self.net.nodes[ns]}:9878"

    def controller_leader(self):
        for ns in self.cluster.namesrvs:
            try:
                reply, _ = call(self.ctl_addr(ns), 1005)
            except OSError:
                continue
            if str((reply.get("extFields") or {}).get("isLeader")).lower() == "true":
                return ns
        raise RuntimeError("no controller calls itself leader")

    def sync_state(self):
        leader = self.controller_leader()
        reply, body = call(self.ctl_addr(leader), 1006, body=json.dumps(list(GROUPS)).encode())
        return parse(body).get("replicasInfoTable") or {}

    def node_of(self, addr):
        host = addr.rsplit(":", 1)[0]
        return next(n for n, a in self.net.nodes.items() if a == host)

    def master_node(self, group):
        info = self.sync_state().get(group) or {}
        if not info.get("masterAddress"):
            raise RuntimeError(f"{group} has no master")
        return self.node_of(info["masterAddress"])

    def steady(self):
        """Both groups with a master and both members in sync, and every NameServer's route
        naming that master as id 0 and both members."""
        try:
            table = self.sync_state()
        except (OSError, RuntimeError):
            return False
        for group in GROUPS:
            info = table.get(group) or {}
            if not info.get("masterAddress") or len(info.get("inSyncReplicas") or []) != 2:
                return False
        for ns in self.cluster.namesrvs:
            try:
                reply, body = call(f"{self.net.nodes[ns]}:{NS_PORT}", 105, {"topic": self.topic})
            except OSError:
                return False
            if reply.get("code") != 0:
                return False
            route = {bd["brokerName"]: bd.get("brokerAddrs") or {} for bd in parse(body).get("brokerDatas") or []}
            for group in GROUPS:
                addrs = {str(k): v for k, v in (route.get(group) or {}).items()}
                if addrs.get("0") != table[group]["masterAddress"] or len(addrs) != 2:
                    return False
        return True


def create_topic(env):
    table = env.sync_state()
    for group in GROUPS:
        master = table[group]["masterAddress"]
        reply, _ = call(master, 17, {"topic": env.topic, "defaultTopic": "TBW102", "readQueueNums": 4,
                                     "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
                                     "topicSysFlag": 0, "order": "false"}, timeout=5)
        if reply.get("code") != 0:
            raise RuntimeError(f"creating {env.topic} on {group}'s master {master}: {reply}")


def schedule(args, rng):
    kinds = [faults.BY_NAME[n] for n in args.faults] if args.faults else faults.CI if args.ci else faults.ALL
    order = list(kinds)
    rng.shuffle(order)
    return order


def run_faults(args, env, rec, rng):
    """Runs the schedule; returns the list of fault records."""
    started = time.monotonic()
    records = []
    rounds = 0
    while True:
        plan = schedule(args, rng)
        print(f"# schedule round {rounds + 1}: {', '.join(k.name for k in plan)}", flush=True)
        for kind in plan:
            if args.duration and time.monotonic() - started > args.duration:
                return records
            records.append(one_fault(env, rec, rng, kind()))
        rounds += 1
        if not args.duration or time.monotonic() - started > args.duration:
            return records


def one_fault(env, rec, rng, fault):
    steady_from = time.monotonic()
    try:
        wait_for("a steady cluster before the fault", STEADY_TIMEOUT_S, env.steady, interval=0.5)
    except RuntimeError as e:
        rec.write(k="note", text=f"not steady before {fault.name}: {e}")
    hold = fault.hold(rng)
    detail = fault.apply(env, rng)
    start = rec.write(k="fault", name=fault.name, phase="start", detail=detail, hold=hold,
                      waited_steady=round(time.monotonic() - steady_from, 1))
    print(f"# {start['t']:8.1f} s  {fault.name}: {json.dumps(detail)}, held {hold} s", flush=True)
    time.sleep(hold)
    fault.heal(env)
    healed = rec.write(k="fault", name=fault.name, phase="heal")
    env.cluster.check_crashes(healed["t"])
    for t, name, code in env.cluster.crashes:
        rec.write(k="crash", name=name, code=code, at=t)
    env.cluster.crashes.clear()
    try:
        wait_for("a steady cluster after the heal", STEADY_TIMEOUT_S, env.steady, interval=0.2)
        steady = rec.write(k="steady", after=fault.name)
        print(f"# {steady['t']:8.1f} s  steady {steady['t'] - healed['t']:.1f} s after the heal", flush=True)
    except RuntimeError:
        rec.write(k="note", text=f"not steady {STEADY_TIMEOUT_S} s after healing {fault.name}")
        print(f"# not steady {STEADY_TIMEOUT_S} s after healing {fault.name}", flush=True)
    if env.cluster.etcd:
        compare_kv(rec, fault.name)
    return {"name": fault.name, "detail": detail, "start": start["t"], "heal": healed["t"], "hold": hold}


def compare_kv(rec, after):
    """Every NameServer's KV namespace until they are the same (10 s at most), then recorded."""
    for _ in range(20):
        tables = rec.kv_tables()
        values = {json.dumps(t, sort_keys=True) for t in tables.values()}
        same = None not in tables.values() and len(values) == 1
        if same:
            break
        time.sleep(0.5)
    rec.write(k="kv_round", after=after, same=same)


def inner(args):
    if os.geteuid() != 0:
        raise SystemExit("bench/chaos/run.py: needs root (network namespaces and iptables)")
    for tool in ("ip", "iptables"):
        if not shutil.which(tool):
            raise SystemExit(f"bench/chaos/run.py: {tool} missing: apt-get install -y iproute2 iptables")
    binary = Path(args.binary).resolve()
    if args.controller == "ours" and not binary.is_file():
        raise SystemExit(f"bench/chaos/run.py: {binary} not found (cargo build --release)")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rmq-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"# chaos: seed {seed}, work dir {workdir}, binary {binary}", flush=True)
    net = Net()
    cluster = Cluster(net, workdir, binary)
    topic = "chaos_topic"
    rec = None
    t_begin = time.monotonic()
    try:
        net.setup_hub()
        if args.controller == "ours":
            cluster.start_etcd([11, 12, 13])
            cluster.start_namesrvs([21, 22])
        else:
            cluster.start_java_namesrvs([21, 22, 23])
        cluster.start_brokers(31)
        env = Env(net, cluster, topic)
        print(f"# netem (delay) available: {net.netem_available()}", flush=True)
        wait_for("both groups with a master and their slave in sync", 120,
                 lambda: _groups_ready(env), interval=1)
        create_topic(env)
        rec = Recorder(workdir / "history.jsonl", net, cluster, topic)
        rec.write(k="run", seed=seed, nodes=net.nodes, netem=net.netem_available(),
                  converge_bound_s=CONVERGE_BOUND_S, wall=time.time() - rec.now(), controller=args.controller)
        rec.start()
        cluster.start_sender(41, topic, max_s=int((args.duration or 1800) + 900))
        wait_for("the producer's first acknowledged send", 90,
                 lambda: " OK " in interop.read_text(cluster.procs["sender"].stdout), interval=1)
        print(f"# {rec.now():8.1f} s  cluster up ({time.monotonic() - t_begin:.0f} s after the start)", flush=True)
        records = run_faults(args, env, rec, rng)
        time.sleep(3)
        cluster.check_crashes(rec.now())
        for t, name, code in cluster.crashes:
            rec.write(k="crash", name=name, code=code, at=t)
        cluster.stop_sender()
        rec.stop()
        sent = interop.read_text(cluster.procs["sender"].stdout)
        keys = max((int(line.split()[1]) for line in sent.splitlines() if line.startswith("SEND ")), default=0) + 1
        consumer_out = cluster.consume(topic, keys, workdir / "consumed.tsv")
        (workdir / "consumer.txt").write_text(consumer_out)
        report = check.check_run(workdir, records)
        report["run_seconds"] = round(time.monotonic() - t_begin, 1)
        (workdir / "report.json").write_text(json.dumps(report, indent=1))
        check.print_report(report)
        return 0 if not report["violations"] else 1
    finally:
        if rec is not None and not rec.stopping.is_set():
            rec.stop()
        cluster.stop_all()
        net.teardown()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _groups_ready(env):
    try:
        table = env.sync_state()
    except (OSError, RuntimeError):
        return False
    return all((table.get(g) or {}).get("masterAddress") and len((table.get(g) or {}).get("inSyncReplicas") or []) == 2
               for g in GROUPS)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ci", action="store_true", help="the short CI schedule (4 faults)")
    parser.add_argument("--duration", type=parse_duration, default=None, help="repeat the schedule this long (30m)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--faults", type=parse_faults, default=None,
                        help=f"only these faults, comma-separated: {', '.join(faults.BY_NAME)}")
    parser.add_argument("--controller", choices=("ours", "java"), default="ours",
                        help="ours: our NameServers on etcd; java: Java 5.5.0 NameServers with DLedger (3 nodes)")
    parser.add_argument("--binary", default=str(HERE.parent.parent / "target" / "release" / "rmq-namesrv"))
    parser.add_argument("--workdir", default=None, help="keep the run here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work dir")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        sys.exit(inner(args))
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "--net", "true"], capture_output=True, timeout=30).returncode != 0:
        raise SystemExit("bench/chaos/run.py: cannot create a network namespace (unshare --net); run as root")
    os.execv(unshare, [unshare, "--net", "--", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--inner"])


if __name__ == "__main__":
    main()
