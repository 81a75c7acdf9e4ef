"""Interop scenarios of the admin CLI's controller commands (`rmq-namesrv admin getControllerMetaData`,
getSyncStateSet, getBrokerEpoch, electMaster, cleanBrokerMetadata, getControllerConfig,
updateControllerConfig) beside the official 5.5.0 tools (`mqadmin`, i.e.
org.apache.rocketmq.tools.command.MQAdminStartup from the client line's jars).

run.py loads this module and calls register(run) with itself; the runner's names are used as
`R.<name>`. The scenario runs against our NameServer with its embedded controller
(`--namesrv ours`) and against the Java NameServer 5.5.0 with its own (`--namesrv java`), each
with two 5.5.0 brokers in controller mode: every command of our CLI answers, Java's tool answers
the same commands, and the two print the same text (the same state, asked one after the other).
Both are also checked against the layout Java's sub-commands print (SHAPES: values normalised,
lines in any order), so that a pass in both modes means that Java's tool prints the same layout
against our controller as against Java's.
"""

import json
import os
import re
import subprocess
import time

R = None  # the runner module (run.py), set by register()

MODES = ("ours", "java")
TOOL_JVM = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
CLUSTER = "InteropCluster"

# Java's layout of each command's text: the distinct lines, values normalised by shape().
REPLICA = "ReplicaIdentity{brokerName='broker-ctl', brokerId=N, brokerAddress='ADDR', alive=true}"
SHAPES = {
    "getControllerMetaData": ["", "#ControllerGroup\tgroupN", "#ControllerLeaderAddress\tADDR",
                              "#ControllerLeaderId\tnN", "#Peer:\tnN:ADDR"],
    "getSyncStateSet": ["", "#MasterAddr\tADDR", "#MasterBrokerId\tN", "#MasterEpoch\tN",
                        "#SyncStateSetEpoch\tN", "#SyncStateSetNums\tN", "#brokerName\tbroker-ctl",
                        f"InSyncReplica:\t{REPLICA}"],
    "getBrokerEpoch": ["", "#Epoch: EpochEntry{epoch=N, startOffset=N, endOffset=N}", "#brokerAddr\tADDR",
                       "#brokerId\tN", "#brokerName\tbroker-ctl", f"#clusterName\t{CLUSTER}"],
    "electMaster": ["", "#BrokerMasterAddr\tADDR", "#BrokerName\tbroker-ctl", f"#ClusterName\t{CLUSTER}",
                    "#MasterEpoch\tN", "#SyncStateSetEpoch\tN"],
}


def register(runner):
    """Adds this module's scenarios to the runner's list."""
    global R
    R = runner
    runner.scenario("controller-admin5", modes=MODES)(s_controller_admin5)


def shape(text):
    """The layout of a tool's text: addresses and numbers replaced, its distinct lines sorted
    (Java prints hash-ordered maps and sets; how many brokers and epochs there are varies)."""
    text = re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "ADDR", text)
    text = re.sub(r"-?\d+", "N", text)
    return sorted(set(text.split("\n")))


def ours(ctx, *args, json_out=False, timeout=30):
    """Our CLI; returns (exit status, stdout, stderr, seconds)."""
    argv = [str(ctx.binary), "admin", "--timeout", "5s", *(["--json"] if json_out else []), *map(str, args)]
    t0 = time.monotonic()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                       preexec_fn=R._child_setup)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"), time.monotonic() - t0


def ours_json(ctx, *args):
    rc, out, err, _ = ours(ctx, *args, json_out=True)
    R.check(rc == 0, f"admin {' '.join(map(str, args))} --json: exit {rc}: {out} {err}", ctx.logs)
    return json.loads(out)


def mqadmin(ctx, *args, timeout=90):
    """Java's mqadmin (5.5.0 tools); returns (stdout, seconds), with stderr (where a failed
    command's exception goes) after a `STDERR:` line when there is some. It exits 0 even when a
    command fails, so callers check the text."""
    lib = R.CACHE / "lib" / "client-5.5.0"
    if not any(lib.glob("rocketmq-tools-*.jar")):
        raise R.Fail(f"no rocketmq-tools jar in {lib}: run interop/setup.sh first")
    home = ctx.home("mqadmin")
    argv = [R.java_bin(), *TOOL_JVM, f"-Duser.home={home}", "-cp", str(lib / "*"),
            "org.apache.rocketmq.tools.command.MQAdminStartup", *map(str, args)]
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                           preexec_fn=R._child_setup)
    except subprocess.TimeoutExpired:
        raise R.Fail(f"mqadmin {' '.join(map(str, args))}: no exit within {timeout} s", ctx.logs)
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    return out + (f"STDERR:\n{err}" if err.strip() else ""), time.monotonic() - t0


class Timings:
    def __init__(self):
        self.rows = []

    def add(self, command, ours_s, java_s):
        self.rows.append((command, ours_s, java_s))

    def text(self):
        return "; ".join(f"{c} {o:.2f} s vs {j:.1f} s" for c, o, j in self.rows)


def both(ctx, timings, name, ns, *args, drop=()):
    """Runs `name args` with our CLI and Java's tool against the same state; both must succeed,
    print the same text (lines in any order, `drop`ped prefixes removed from ours) and Java's
    layout. Returns our text."""
    rc, text, err, ours_s = ours(ctx, "-n", ns, name, *args)
    R.check(rc == 0 and err == "", f"our {name} {' '.join(map(str, args))}: exit {rc}, {err.strip()}", ctx.logs)
    java, java_s = mqadmin(ctx, name, "-n", ns, *args)
    R.check("STDERR:" not in java, f"mqadmin {name}: {java.strip()[:800]}", ctx.logs)
    timings.add(f"{name} {args[-2]}", ours_s, java_s)
    kept = "\n".join(line for line in text.split("\n") if not line.startswith(drop))
    R.check(sorted(kept.split("\n")) == sorted(java.split("\n")),
            f"{name}: our CLI printed {text!r}, mqadmin {java!r}", ctx.logs)
    expected = SHAPES.get(name)
    if expected is not None:
        R.check(shape(java) == expected, f"{name}: mqadmin's layout {shape(java)} is not {expected}", ctx.logs)
    return text


def config_layout(ctx, text, addr, who):
    lines = text.rstrip("\n").split("\n")
    R.check(lines[0] == f"============{addr}============", f"{who} getControllerConfig header: {lines[0]!r}",
            ctx.logs)
    bad = [line for line in lines[1:] if not re.match(r"^\S.{49,}=  ", line) or len(line.split("=  ")[0]) < 50]
    R.check(len(lines) > 10 and not bad, f"{who} getControllerConfig lines not `%-50s=  %s`: {bad[:3]}", ctx.logs)
    return {line.split("=  ", 1)[0].rstrip(): line.split("=  ", 1)[1] for line in lines[1:]}


def wait_both_in_sync(ctx, ns, ctl, master_addr, timeout=60):
    """Polls our getSyncStateSet --json until `master_addr` is master with two in sync; returns
    (the replicas info, seconds)."""
    t0 = time.monotonic()
    last = {}

    def settled():
        doc = ours_json(ctx, "-n", ns, "getSyncStateSet", "-a", ctl, "-b", R.CTL_BROKER)
        info = doc["result"]["replicasInfoTable"].get(R.CTL_BROKER) or {}
        last["info"] = info
        return info.get("masterAddress") == master_addr and len(info.get("inSyncReplicas") or []) == 2 and info

    try:
        info = R.wait_until(f"{master_addr} master with both brokers in sync", timeout, 0.5, settled)
    except R.Fail as e:
        raise R.Fail(f"{e}; last: {last.get('info')}", ctx.logs)
    return info, time.monotonic() - t0


def s_controller_admin5(ctx):
    """Our CLI's controller commands and Java's mqadmin 5.5.0 against the NameServer under test
    (its embedded controller) and two 5.5.0 brokers in controller mode: getControllerMetaData,
    getSyncStateSet (-b, -c), getBrokerEpoch (-b, -c), getControllerConfig print the same text
    (Java's layout); updateControllerConfig succeeds on both and is refused for a black-listed key
    (ours: exit 1 with the remark); cleanBrokerMetadata of a living broker is refused by both;
    electMaster by ours elects the slave, by mqadmin the old master back (same layout)."""
    name = ctx.name
    ctl_addr = f"127.0.0.1:{R.free_port()}"
    ns = ctx.start_namesrv(controller=R.controller_props(ctx, "namesrv", {"n0": ctl_addr}, "n0"))
    ctl = ns.ctl_addr
    a = R.start_ctl_broker(ctx, ns.addr, ctl, "broker-ctl-a")
    b = R.start_ctl_broker(ctx, ns.addr, ctl, "broker-ctl-b")
    master, slave, addrs = R.wait_ctl_pair(ctx, ns.addr, [a, b])
    info, _ = wait_both_in_sync(ctx, ns.addr, ctl, master.addr)
    ids = {r["brokerAddress"]: r["brokerId"] for r in info["inSyncReplicas"]}
    print(f"# {name}: cluster info {addrs}; controller ids {ids}", flush=True)
    timings = Timings()

    both(ctx, timings, "getControllerMetaData", ns.addr, "-a", ctl)
    both(ctx, timings, "getSyncStateSet", ns.addr, "-a", ctl, "-b", R.CTL_BROKER)
    both(ctx, timings, "getSyncStateSet", ns.addr, "-a", ctl, "-c", CLUSTER)
    both(ctx, timings, "getBrokerEpoch", ns.addr, "-b", R.CTL_BROKER)
    both(ctx, timings, "getBrokerEpoch", ns.addr, "-c", CLUSTER)

    rc, text, err, ours_s = ours(ctx, "getControllerConfig", "-a", ctl)
    R.check(rc == 0, f"our getControllerConfig: exit {rc}, {err}", ctx.logs)
    java, java_s = mqadmin(ctx, "getControllerConfig", "-a", ctl)
    timings.add("getControllerConfig", ours_s, java_s)
    R.check(config_layout(ctx, text, ctl, "ours") == config_layout(ctx, java, ctl, "mqadmin"),
            f"getControllerConfig: ours {text!r}, mqadmin {java!r}", ctx.logs)

    rc, text, err, ours_s = ours(ctx, "updateControllerConfig", "-a", ctl, "-k", "enableElectUncleanMaster",
                                 "-v", "false")
    R.check(rc == 0 and text == f"update controller config enableElectUncleanMaster=false in controller[{ctl}] OK\n",
            f"our updateControllerConfig: exit {rc}, {text!r} {err}", ctx.logs)
    java, java_s = mqadmin(ctx, "updateControllerConfig", "-a", ctl, "-k", "enableElectUncleanMaster", "-v", "false")
    timings.add("updateControllerConfig", ours_s, java_s)
    R.check(java.startswith(f"update controller config success![{ctl}]"), f"mqadmin updateControllerConfig: {java}",
            ctx.logs)
    rc, text, err, _ = ours(ctx, "updateControllerConfig", "-a", ctl, "-k", "configStorePath", "-v", "/tmp/x")
    R.check(rc == 1 and "NO_PERMISSION(16): Can not update config in black list." in err,
            f"our refused updateControllerConfig: exit {rc}, {err}", ctx.logs)
    java, _ = mqadmin(ctx, "updateControllerConfig", "-a", ctl, "-k", "configStorePath", "-v", "/tmp/x")
    R.check("CODE: 16" in java, f"mqadmin refused updateControllerConfig: {java[:600]}", ctx.logs)

    clean = ["-a", ctl, "-bn", R.CTL_BROKER, "-b", ids[slave.addr], "-c", CLUSTER]
    rc, text, err, ours_s = ours(ctx, "cleanBrokerMetadata", *clean)
    R.check(rc == 1 and "CONTROLLER_INVALID_CLEAN_BROKER_METADATA(2009)" in err,
            f"our cleanBrokerMetadata of a living broker: exit {rc}, {text} {err}", ctx.logs)
    java, java_s = mqadmin(ctx, "cleanBrokerMetadata", *clean)
    timings.add("cleanBrokerMetadata (refused)", ours_s, java_s)
    R.check("CODE: 2009" in java, f"mqadmin cleanBrokerMetadata of a living broker: {java[:600]}", ctx.logs)

    elect_round(ctx, timings, ns, ctl, ids, master, slave)
    print(f"# {name}: ours vs mqadmin: {timings.text()}", flush=True)


def elect_round(ctx, timings, ns, ctl, ids, master, slave):
    """electMaster: ours makes the slave master, mqadmin the old master again. Ours prints Java's
    layout and the broker set's members (`\t#Broker` lines). mqadmin 5.5.0 cannot read the
    answer of any controller, Java's included: the body's `brokerAddrs` has bare integer keys
    (fastjson 1's output, which both controllers send) and the tools read it with fastjson2,
    which refuses them; the election is done all the same, so it is checked on the controller."""
    name = ctx.name
    args = ["-a", ctl, "-b", ids[slave.addr], "-bn", R.CTL_BROKER, "-c", CLUSTER]
    rc, text, err, ours_s = ours(ctx, "electMaster", *args)
    R.check(rc == 0 and f"#BrokerMasterAddr\t{slave.addr}\n" in text, f"our electMaster: exit {rc}, {text!r} {err}",
            ctx.logs)
    members = [line for line in text.split("\n") if line.startswith("\t#Broker")]
    R.check(len(members) == 2, f"our electMaster lists the members: {text!r}", ctx.logs)
    kept = "\n".join(line for line in text.split("\n") if not line.startswith("\t#Broker"))
    R.check(shape(kept) == SHAPES["electMaster"], f"our electMaster layout {shape(kept)}", ctx.logs)
    _, settled = wait_both_in_sync(ctx, ns.addr, ctl, slave.addr)
    print(f"# {name}: our electMaster -> {slave.addr} master; both in its SyncStateSet after {settled:.1f} s",
          flush=True)
    java, java_s = mqadmin(ctx, "electMaster", "-a", ctl, "-b", ids[master.addr], "-bn", R.CTL_BROKER, "-c", CLUSTER)
    timings.add("electMaster", ours_s, java_s)
    R.check("not support unquoted name" in java or f"#BrokerMasterAddr\t{master.addr}" in java,
            f"mqadmin electMaster: {java[:600]}", ctx.logs)
    if "STDERR:" not in java:
        R.check(shape(java) == SHAPES["electMaster"], f"mqadmin electMaster layout {shape(java)}", ctx.logs)
    _, settled = wait_both_in_sync(ctx, ns.addr, ctl, master.addr)
    outcome = "fails reading the answer (fastjson2: bare keys)" if "STDERR:" in java else "prints it"
    print(f"# {name}: mqadmin electMaster -> {master.addr} master again ({outcome}); both in sync after "
          f"{settled:.1f} s", flush=True)
