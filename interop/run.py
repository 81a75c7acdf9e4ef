#!/usr/bin/env python3
"""Interop runner: real RocketMQ brokers and clients against the NameServer under test.

    interop/setup.sh && python3 interop/run.py [--namesrv ours|java|java4] [--only NAME,...] [NAME...]

--namesrv ours   (default) target/release/rmq-namesrv, built by `cargo build --release`
--namesrv java   the official Java NameServer 5.x (validates the scenarios themselves)
--namesrv java4  the official Java NameServer 4.9.x

Everything listens on and dials 127.0.0.1 only. By default the runner re-executes itself in a
private network namespace (`unshare --net`, loopback only) so that no peer can reach any other
address even by accident: the Java NameServer 5.x, for one, probes <host address>:<port> of
itself. --netns off skips that (then that probe goes to the host address); if no namespace can
be made, --namesrv java refuses to run without --netns off.

Every process started is remembered by PID and killed by PID at the end of its scenario (also on
failure and Ctrl-C); every wait is bounded. One line per scenario, `PASS <name>` or
`FAIL <name>: <reason>` followed by the tails of the relevant logs, then `N passed, M failed`;
exit status 1 if any failed. Python standard library only; the TLS scenarios (tls-*,
go-client-tls5) also run `openssl` to make their certificates in their temporary directory.
"""

import argparse
import ctypes
import fcntl
import http.client
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import ssl
import string
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".cache"
OUR_BINARY = REPO / "target" / "release" / "rmq-namesrv"
# Go and C++ client peers, built / installed by setup.sh (setup_go_cpp.sh)
GO_PEER = CACHE / "go" / "bin" / "rmq-go-peer"
CPP_PYTHON = CACHE / "cpp-venv" / "bin" / "python"
CPP_PEER = HERE / "cpp" / "peer.py"
LOG_TAIL_LINES = 40
# --long: scenarios with a long variant run at their full size (bigbroker.py) or in full (rolling.py);
# CI runs the short one
LONG = False

# JVM options. Servers: modest heaps. Peers: short-lived, so C1 only and a serial GC.
NAMESRV_JVM = ["-Xms128m", "-Xmx256m", "-XX:+UseSerialGC"]
BROKER_JVM = ["-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC"]
PEER_JVM = ["-Xms32m", "-Xmx160m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
# 4.9.x servers touch JDK internals (DirectBuffer cleaner) that JDK 17 hides.
JDK17_OPENS = ["--add-opens", "java.base/java.nio=ALL-UNNAMED",
               "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
               "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"]
# A 4.9.x broker refuses every send (code 14, "the broker's disk is full") once the file system of
# its store is over 90 % used (a system property, not a broker.conf key): a test store is tiny, so
# only refuse on a really full disk (a shared development machine is often past 90 %).
BROKER4_DISK = ["-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99"]


class Fail(Exception):
    """A scenario assertion failed; logs lists (label, path) whose tails explain it."""

    def __init__(self, reason, logs=()):
        super().__init__(reason)
        self.logs = list(logs)


def load_versions():
    versions = {}
    for line in (HERE / "java" / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            versions[key.strip()] = value.strip()
    return versions


VERSIONS = load_versions()
# line -> (server version, client version)
LINES = {
    "5": (VERSIONS["RMQ5_SERVER"], VERSIONS["RMQ5_CLIENT"]),
    "4": (VERSIONS["RMQ4_SERVER"], VERSIONS["RMQ4_CLIENT"]),
}


def java_bin():
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise SystemExit("java not found")
    return found


def server_classpath(line, role):
    """Jars of lib/server-<ver>; the NameServer leaves the broker jar out (its logback config
    would otherwise win and name the NameServer's log files broker*.log)."""
    lib = CACHE / "lib" / f"server-{LINES[line][0]}"
    jars = sorted(lib.glob("*.jar"))
    if not jars:
        raise Fail(f"{lib} is empty: run interop/setup.sh first")
    if role == "namesrv":
        jars = [j for j in jars if not j.name.startswith("rocketmq-broker-")]
    return os.pathsep.join(str(j) for j in jars)


def client_classpath(line):
    version = LINES[line][1]
    classes = CACHE / "classes" / f"client-{version}"
    lib = CACHE / "lib" / f"client-{version}"
    if not (classes / "rmqinterop").is_dir():
        raise Fail(f"{classes} missing: run interop/setup.sh first")
    return f"{classes}{os.pathsep}{lib}{os.sep}*"


# ---------------------------------------------------------------------------------------------
# ports

_allocated = set()


def _bindable(port):
    """True if nothing listens on port, on the wildcard address (4.9.x servers and the HA
    service bind the wildcard) nor on 127.0.0.1."""
    for host in ("", "127.0.0.1"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def free_port(offsets=(0,)):
    """A port p such that p+o is free for every o in offsets (found by binding 127.0.0.1:0)."""
    for _ in range(200):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        ports = [base + o for o in offsets]
        if any(p in _allocated or not 1024 < p < 65536 for p in ports):
            continue
        if all(_bindable(p) for p in ports):
            _allocated.update(ports)
            return base
    raise Fail(f"no free port set {offsets} after 200 tries")


def port_open(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# processes

_libc = None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:
    pass
PR_SET_PDEATHSIG = 1


def _child_setup():
    # Our children die with the runner even if it is SIGKILLed (only those we started).
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Proc:
    def __init__(self, label, popen, home, stdout, stderr):
        self.label = label
        self.popen = popen
        self.pid = popen.pid
        self.home = home
        self.stdout = stdout
        self.stderr = stderr

    def alive(self):
        return self.popen.poll() is None


def wait_until(what, timeout, interval, check):
    """Calls check() until it returns a truthy value or timeout seconds pass (bounded also in
    count). Returns the value; raises Fail with `what` on timeout."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / interval) + 2):
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise Fail(f"timed out after {timeout:g} s waiting for {what}")


class Ctx:
    """One scenario: its work dir, the processes it started (killed by PID at the end) and the
    logs worth showing when it fails."""

    def __init__(self, name, workdir, mode, count, binary=OUR_BINARY):
        self.name = name
        self.binary = Path(binary)
        self.dir = workdir
        self.mode = mode
        self.count = count
        self.procs = []
        self.logs = []  # (label, path) of servers
        self.seq = 0
        self.dir.mkdir(parents=True, exist_ok=True)

    def uniq(self, prefix):
        self.seq += 1
        suffix = "".join(random.choice(string.ascii_lowercase) for _ in range(4))
        return f"{prefix}_{self.seq}_{suffix}"

    def home(self, label):
        d = self.dir / label
        n = 1
        while d.exists():
            n += 1
            d = self.dir / f"{label}-{n}"
        d.mkdir(parents=True)
        return d

    def spawn(self, label, argv, home, env=None, stdin=subprocess.DEVNULL, stdout_pipe=False):
        out = home / "stdout.log"
        err = home / "stderr.log"
        full_env = {k: v for k, v in os.environ.items() if k not in ("ROCKETMQ_HOME", "NAMESRV_ADDR")}
        full_env.update(env or {})
        if Path(argv[0]).name == "java":
            # Java's temp files (a 5.x broker unpacks a 13 MB librocksdbjni*.so per start) go
            # under the process's home, which the run removes, not into the machine's /tmp.
            tmp = home / "tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            argv = [argv[0], f"-Djava.io.tmpdir={tmp}", *argv[1:]]
        with open(err, "wb") as err_file, open(os.devnull if stdout_pipe else out, "wb") as out_file:
            popen = subprocess.Popen(
                argv, cwd=home, env=full_env, stdin=stdin,
                stdout=subprocess.PIPE if stdout_pipe else out_file,
                stderr=err_file, start_new_session=True, preexec_fn=_child_setup)
        proc = Proc(label, popen, home, out, err)
        self.procs.append(proc)
        return proc

    def stop(self, proc, sig=signal.SIGTERM, timeout=60):
        """Signals proc (by PID) and waits for its exit, SIGKILL after timeout. Returns seconds."""
        start = time.monotonic()
        if proc.alive():
            proc.popen.send_signal(sig)
            try:
                proc.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(timeout=10)
        return time.monotonic() - start

    def cleanup(self):
        for proc in reversed(self.procs):
            if proc.alive():
                try:
                    proc.popen.kill()
                    proc.popen.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass

    # -- NameServers ---------------------------------------------------------------------------

    def start_namesrv(self, label="namesrv", tls=None, tls_form="properties", log_level=None, controller=None):
        """Starts the NameServer under test (self.mode) and returns it once it accepts.

        tls: Java's tls.* server settings ({"tls.server.mode": "enforcing", ...}). Ours gets
        them in a file given to --config, as Java names in a .properties file (tls_form
        "properties") or as the [tls] section of a TOML file ("toml"); Java's NameServer as -D
        flags. log_level: ours only (--log-level). controller: the embedded RIP-44 controller's
        keys (controller_props()), written to the properties file of either server (ours: the
        --config file); the NameServer is then returned once its controller address
        (proc.ctl_addr, this node's entry of controllerDLegerPeers) accepts connections too."""
        if controller and self.mode == "java4":
            raise Fail("the 4.9.x NameServer has no embedded controller")
        if self.mode == "ours":
            config = None
            if tls or controller:
                home = self.dir / f"{label}-config"
                home.mkdir(parents=True, exist_ok=True)
                if tls_form == "toml":
                    if controller:
                        raise Fail("start_namesrv: the controller keys go in a .properties --config only")
                    config = home / "namesrv.toml"
                    config.write_text(tls_toml(tls))
                else:
                    config = home / "namesrv.properties"
                    write_properties(config, {**(tls or {}), **(controller or {})})
            extra = ["--log-level", log_level] if log_level else []
            proc = self._start_ours(label, config=config, extra_args=extra)
        else:
            jvm = [f"-D{k}={v}" for k, v in (tls or {}).items()]
            props = None
            if controller:
                # Java only: DLedger's log files are 1 GiB by default (mapped, sparse); a test needs little
                props = {**controller, "mappedFileSize": 16 * 1024 * 1024}
            proc = self._start_java_namesrv(label, "5" if self.mode == "java" else "4", jvm=jvm, props=props)
        proc.ctl_addr = None
        if controller:
            proc.ctl_addr = controller_self_addr(controller)
            wait_until(f"{label}'s controller to accept on {proc.ctl_addr} (controllerDLegerPeers)",
                       30 if self.mode == "ours" else 60, 0.3,
                       lambda: proc.alive() and port_open(proc.ctl_addr) or self._dead(proc))
        return proc

    def _dead(self, proc):
        if not proc.alive():
            raise Fail(f"{proc.label} exited with {proc.popen.returncode}", self.logs)
        return False

    def _start_ours(self, label, config=None, extra_args=(), listen="127.0.0.1:0"):
        if not self.binary.is_file():
            raise Fail(f"{self.binary} not found: run `cargo build --release`")
        home = self.home(label)
        argv = [str(self.binary), "--listen", listen,
                "--kv-config-path", str(home / "kvConfig.json"),
                "--config-store-path", str(home / "namesrv.properties")]
        if config is not None:
            argv += ["--config", str(config)]
        argv += list(extra_args)
        (home / "argv.txt").write_text(" ".join(argv) + "\n")
        # HOME in its own directory: every "~/..." default (the controller's config store, the
        # route snapshot) stays in the scenario, as the Java servers' -Duser.home does.
        proc = self.spawn(label, argv, home, env={"HOME": str(home)}, stdout_pipe=True)
        self.logs.append((f"{label} stderr", proc.stderr))
        lines = queue.Queue()

        def pump():
            # first line to the queue, the rest (if any) to stdout.log
            with open(proc.stdout, "wb") as sink:
                first = True
                for raw in proc.popen.stdout:
                    if first:
                        lines.put(raw.decode(errors="replace"))
                        first = False
                    sink.write(raw)
                    sink.flush()
            if first:
                lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            raise Fail("rmq-namesrv printed no listening line within 30 s", self.logs)
        m = re.fullmatch(r"rmq-namesrv listening on (127\.0\.0\.1:\d+)\s*", line or "")
        if not m:
            raise Fail(f"rmq-namesrv: unexpected first stdout line {line!r}", self.logs)
        proc.addr = m.group(1)
        proc.kind = "ours"
        return proc

    def _start_java_namesrv(self, label, line, jvm=(), props=None):
        """props: more keys of its -c properties file (the controller's)."""
        home = self.home(label)
        more = props or {}
        # a fixed listenPort in props: a restart on the same address
        port = int(more.get("listenPort") or free_port())
        conf = home / "namesrv.properties"
        props = {
            "listenPort": port,
            "kvConfigPath": home / "kvConfig.json",
            "rocketmqHome": home,
        }
        if line == "5":
            props["bindAddress"] = "127.0.0.1"  # 4.9.x has no bindAddress (binds the wildcard)
        props.update(more)
        write_properties(conf, props)
        if line == "4":
            write_logback_4x(home, "namesrv")
        argv = [java_bin(), *NAMESRV_JVM, *jvm, f"-Duser.home={home}", "-cp", server_classpath(line, "namesrv"),
                "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(conf)]
        (home / "argv.txt").write_text(" ".join(argv) + "\n")
        proc = self.spawn(label, argv, home, env={"ROCKETMQ_HOME": str(home)})
        proc.addr = f"127.0.0.1:{port}"
        proc.kind = "java"
        self.logs.append((f"{label} stdout", proc.stdout))
        self.logs.append((f"{label} namesrv.log", home / "logs" / "rocketmqlogs" / "namesrv.log"))
        self._await_boot(proc, "Name Server boot success", 60)
        return proc

    def _await_boot(self, proc, marker, timeout):
        def ready():
            if not proc.alive():
                raise Fail(f"{proc.label} exited with {proc.popen.returncode} during start-up", self.logs)
            return marker in read_text(proc.stdout) and port_open(proc.addr)

        wait_until(f"{proc.label} to start ({marker!r} and {proc.addr} accepting)", timeout, 0.3, ready)

    # -- brokers -------------------------------------------------------------------------------

    def start_broker(self, line, namesrv, broker_name, broker_id=0, cluster="InteropCluster",
                     role="ASYNC_MASTER", label=None, extra=None, jvm=(), address_server=None, wait=True):
        """Starts a Java broker of `line` ("5" or "4") registering to `namesrv` (a;b); jvm: more
        JVM options (the tls.* system properties). address_server "127.0.0.1:PORT" (namesrv
        None): no namesrvAddr; the broker fetches its NameServer list from that HTTP address
        server (fetchNamesrvAddrByAddressServer, rmqAddressServerDomain), 10 s after its start.
        wait=False returns at once; then await_broker(proc) before using it (several brokers or a
        proxy can start side by side)."""
        label = label or f"broker{line}-{broker_name}-{broker_id}"
        home = self.home(label)
        # listenPort p; the broker also binds p-2 (fast/VIP channel) and p+1 (HA; 4.9.x forces it)
        port = free_port(offsets=(-2, 0, 1))
        store = home / "store"
        props = {
            "brokerClusterName": cluster,
            "brokerName": broker_name,
            "brokerId": broker_id,
            "brokerRole": role,
            "namesrvAddr": namesrv,
            # MANDATORY: otherwise the broker advertises the host's first interface address
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "listenPort": port,
            "haListenPort": port + 1,
            "storePathRootDir": store,
            "storePathCommitLog": store / "commitlog",
            "mappedFileSizeCommitLog": 16 * 1024 * 1024,
            "mappedFileSizeConsumeQueue": 60000 * 20,
            "maxHashSlotNum": 10000,
            "maxIndexNum": 40000,
            "autoCreateTopicEnable": "true",
            "fetchNamesrvAddrByAddressServer": "false",
            "flushDiskType": "ASYNC_FLUSH",
            "rocketmqHome": home,
        }
        if line == "5":
            props.update({
                "bindAddress": "127.0.0.1",   # remoting ports (HA still binds the wildcard)
                "timerWheelEnable": "false",  # no timer store: fewer files and threads
                "enableControllerMode": "false",
                "enableSlaveActingMaster": "false",
            })
        if address_server:
            del props["namesrvAddr"]
            props["fetchNamesrvAddrByAddressServer"] = "true"
            props["rmqAddressServerDomain"] = address_server
        props.update(extra or {})
        conf = home / "broker.conf"
        write_properties(conf, props)
        if line == "4":
            write_logback_4x(home, "broker")
        jvm = BROKER_JVM + (JDK17_OPENS + BROKER4_DISK if line == "4" else []) + list(jvm)
        argv = [java_bin(), *jvm, f"-Duser.home={home}", "-cp", server_classpath(line, "broker"),
                "org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf)]
        (home / "argv.txt").write_text(" ".join(argv) + "\n")
        proc = self.spawn(label, argv, home, env={"ROCKETMQ_HOME": str(home)})
        proc.line = line
        proc.argv = argv
        proc.broker_name = broker_name
        proc.broker_id = broker_id
        proc.addr = f"127.0.0.1:{port}"
        proc.ha_addr = f"127.0.0.1:{port + 1}"
        proc.conf = conf
        proc.log = home / "logs" / "rocketmqlogs" / "broker.log"
        self.logs.append((f"{label} stdout", proc.stdout))
        self.logs.append((f"{label} broker.log", proc.log))
        if wait:
            self.await_broker(proc)
        return proc

    def await_broker(self, proc):
        self._await_boot(proc, "boot success", 90)

    def restart_broker(self, old):
        """Starts a broker again with the same config, ports and store as `old` (which must be
        dead)."""
        if old.alive():
            raise Fail(f"{old.label} is still running")
        (old.home / "stdout.log").rename(old.home / f"stdout.{time.time():.0f}.log")
        proc = self.spawn(old.label, old.argv, old.home, env={"ROCKETMQ_HOME": str(old.home)})
        for attr in ("line", "argv", "broker_name", "broker_id", "addr", "ha_addr", "conf", "log"):
            setattr(proc, attr, getattr(old, attr))
        self._await_boot(proc, "boot success", 90)
        return proc

    # -- Java peers ----------------------------------------------------------------------------

    def peer(self, line, main, args, timeout=120, stdin_text=None, expect_ok=True, jvm=(), classpath=None):
        """Runs rmqinterop.<main> of client line `line` and returns its RESULT objects (a list
        for Admin batches, else one dict). Raises Fail (with the peer's output) when it does not
        finish in time, prints no RESULT line, or (expect_ok) reports ok=false. jvm: more JVM
        options (the tls.* system properties). classpath: another one than client line `line`'s
        (the gRPC SDK peer's)."""
        label = f"{main.lower()}{line}"
        home = self.home(label)
        argv = [java_bin(), *PEER_JVM, *jvm, f"-Duser.home={home}",
                "-Drocketmq.client.rebalance.waitInterval=1000",
                "-cp", classpath or client_classpath(line), f"rmqinterop.{main}", *[str(a) for a in args]]
        (home / "argv.txt").write_text(" ".join(argv) + "\n")
        proc = self.spawn(label, argv, home, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL)
        logs = [(f"{label} stdout", proc.stdout), (f"{label} stderr", proc.stderr)]
        try:
            if stdin_text is not None:
                proc.popen.communicate(stdin_text.encode(), timeout=timeout)
            else:
                proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(timeout=10)
            raise Fail(f"{main} {' '.join(map(str, args))}: no exit within {timeout} s", logs + self.logs)
        results = []
        for text in read_text(proc.stdout).splitlines():
            if text.startswith("RESULT "):
                try:
                    results.append(json.loads(text[len("RESULT "):]))
                except ValueError:
                    raise Fail(f"{main}: unparsable result line {text!r}", logs)
        if not results:
            raise Fail(f"{main} exited {proc.popen.returncode} without a RESULT line", logs + self.logs)
        if stdin_text is None:
            result = results[-1]
            result["_logs"] = logs
            if expect_ok and (not result.get("ok") or proc.popen.returncode != 0):
                raise Fail(f"{main} {' '.join(map(str, args))}: {compact(result)}", logs + self.logs)
            return result
        for r in results:
            r["_logs"] = logs
        return results

    def admin(self, namesrv, *ops, timeout=120, jvm=()):
        """Runs Admin (5.x tools) with one operation per entry of ops; returns the results."""
        results = self.peer("5", "Admin", ["--namesrv", namesrv, "--batch"], timeout=timeout,
                            stdin_text="\n".join(ops) + "\n", jvm=jvm)
        if len(results) != len(ops):
            raise Fail(f"Admin ran {len(results)} of {len(ops)} operations", results[0]["_logs"] if results else [])
        return results

    def wait_registered(self, namesrv, broker, ids=None, timeout=60):
        ids = ids or str(broker.broker_id)
        (r,) = self.admin(namesrv, f"clusterWait {broker.broker_name} {ids} {timeout}", timeout=timeout + 60)
        check(r["ok"], f"broker {broker.broker_name} ids {ids} not in cluster info of {namesrv}: {r.get('error')}",
              r["_logs"])
        return r

    def cli(self, namesrv, tls_args, *cmd, timeout=30):
        """Runs our admin CLI (`<binary> admin -n namesrv TLS_ARGS --json CMD`); returns (exit
        status, parsed stdout or None, stderr text). It speaks to Java's NameServer as well."""
        if not self.binary.is_file():
            raise Fail(f"{self.binary} not found: run `cargo build --release`")
        argv = [str(self.binary), "admin", "-n", namesrv, "--timeout", "5s", "--json", *map(str, tls_args),
                *map(str, cmd)]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                               preexec_fn=_child_setup)
        except subprocess.TimeoutExpired:
            raise Fail(f"{' '.join(argv)}: no exit within {timeout} s", self.logs)
        out = r.stdout.decode(errors="replace").strip()
        try:
            doc = json.loads(out) if out else None
        except ValueError:
            doc = None
        return r.returncode, doc, r.stderr.decode(errors="replace").strip()

    def cli_wait_registered(self, namesrv, tls_args, broker, timeout=60):
        """Polls `admin clusterList` (our CLI, with tls_args) until broker's id maps to its
        address; returns seconds waited."""
        t0 = time.monotonic()
        last = {}

        def listed():
            rc, doc, err = self.cli(namesrv, tls_args, "clusterList")
            last.update(rc=rc, doc=doc, err=err)
            addrs = cluster_brokers(doc or {}).get(broker.broker_name, {})
            return rc == 0 and addrs.get(str(broker.broker_id)) == broker.addr

        try:
            wait_until(f"{broker.broker_name} in clusterList over TLS", timeout, 1, listed)
        except Fail as e:
            raise Fail(f"{e}; last: exit {last.get('rc')}, {json.dumps(last.get('doc'))[:600]} {last.get('err', '')[:400]}",
                       self.logs)
        return time.monotonic() - t0

    # -- Go and C++ peers ----------------------------------------------------------------------

    def native_peer(self, client, cmd, args, peer_timeout=60, expect_ok=True, log_level="warn"):
        """Runs the Go peer (client "go": rmq-go-peer, rocketmq-client-go v2) or the C++ peer
        (client "cpp": cpp/peer.py in the venv, rocketmq-client-cpp) as `<peer> cmd args
        --timeout <peer_timeout>s` with HOME in its own directory, and returns its JSON result
        line as a dict (`_logs`: its output files, `_home`: its directory). Raises Fail (with
        its output) when it does not exit within peer_timeout + 30 s, prints no result, or
        (expect_ok) reports ok=false."""
        label = f"{client}-{cmd}"
        home = self.home(label)
        args = [str(a) for a in args] + ["--timeout", f"{peer_timeout}s", "--log-level", log_level]
        if client == "go":
            if not os.access(GO_PEER, os.X_OK):
                raise Fail(f"{GO_PEER} missing: run interop/setup.sh first")
            argv = [str(GO_PEER), cmd, *args]
        else:
            if not os.access(CPP_PYTHON, os.X_OK):
                raise Fail(f"{CPP_PYTHON} missing: run interop/setup.sh first")
            # the C++ client logs to <home>/logs/rocketmq-cpp/<pid>_rocketmq-cpp.log.N
            argv = [str(CPP_PYTHON), str(CPP_PEER), cmd, *args, "--home", str(home)]
        (home / "argv.txt").write_text(" ".join(argv) + "\n")
        proc = self.spawn(label, argv, home, env={"HOME": str(home)})
        logs = [(f"{label} stdout", proc.stdout), (f"{label} stderr", proc.stderr)]
        what = f"{client} {cmd} {' '.join(args)}"
        try:
            proc.popen.wait(timeout=peer_timeout + 30)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(timeout=10)
            timed_out = True
        logs += [(f"{label} client log", p) for p in sorted((home / "logs").glob("rocketmq-cpp/*"))]
        if timed_out:
            raise Fail(f"{what}: no exit within {peer_timeout + 30} s", logs + self.logs)
        result = None
        for text in read_text(proc.stdout).splitlines():
            if text.startswith("{"):
                try:
                    result = json.loads(text)
                except ValueError:
                    raise Fail(f"{what}: unparsable result line {text!r}", logs)
        if result is None:
            raise Fail(f"{what}: exited {proc.popen.returncode} without a result line", logs + self.logs)
        result["_logs"] = logs
        result["_home"] = home
        if expect_ok and (not result.get("ok") or proc.popen.returncode != 0):
            raise Fail(f"{what}: {compact(result)}", logs + self.logs)
        return result

    def native_route(self, client, namesrv, topic, broker_name, wait=30):
        """Route of an existing topic through `client` (go|cpp): retried for up to `wait` s until
        it lists queues, all of broker_name; returns the last result."""
        def found():
            r = self.native_peer(client, "route", ["--namesrv", namesrv, "--topic", topic], peer_timeout=15,
                                 expect_ok=False)
            found.last = r
            return r if r.get("ok") and r.get("brokers") == [broker_name] else None

        found.last = {}
        try:
            return wait_until(f"{client} route of {topic} listing {broker_name}", wait, 1, found)
        except Fail as e:
            raise Fail(f"{e}; last: {compact(found.last)}", found.last.get("_logs", []) + self.logs)


def write_properties(path, props):
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def write_logback_4x(home, name):
    """4.9.x servers require $ROCKETMQ_HOME/conf/logback_<name>.xml; ours writes one file
    (same place as 5.x: <user.home>/logs/rocketmqlogs/<name>.log)."""
    (home / "conf").mkdir(exist_ok=True)
    log = home / "logs" / "rocketmqlogs" / f"{name}.log"
    (home / "conf" / f"logback_{name}.xml").write_text(f"""<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss.SSS}} %-5level [%thread] %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
""")


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def tail(path, n=LOG_TAIL_LINES):
    return read_text(path).splitlines()[-n:]


def compact(result):
    return json.dumps({k: v for k, v in result.items() if not k.startswith("_")}, separators=(",", ":"))[:1500]


def check(cond, reason, logs=()):
    if not cond:
        raise Fail(reason, logs)


def route_addrs(result, broker_name):
    for b in result.get("brokers", []):
        if b["name"] == broker_name:
            return b["addrs"]
    return None



# ---------------------------------------------------------------------------------------------
# TLS: certificates made by each scenario with openssl, raw probes, Java's tls.* options

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Certs:
    """Made by make_certs() in one scenario's directory (never in the repository): a CA; a
    server certificate for IP 127.0.0.1 and DNS localhost signed by it (EKU serverAuth and
    clientAuth; key as plain PKCS#8 and as a PBES2-encrypted PKCS#8 copy); a client
    certificate signed by the CA; a second, rogue CA with a client certificate of its own.
    EC P-256 keys, valid for 2 days."""

    def __init__(self, d):
        self.dir = d
        self.ca = d / "ca.pem"
        self.server_cert = d / "server.pem"
        self.server_key = d / "server.key"
        self.server_key_enc = d / "server.enc.key"
        self.server_key_password = "".join(random.choice(string.ascii_letters + string.digits) for _ in range(16))
        self.client_cert = d / "client.pem"
        self.client_key = d / "client.key"
        self.rogue_ca = d / "rogue-ca.pem"
        self.rogue_client_cert = d / "rogue-client.pem"
        self.rogue_client_key = d / "rogue-client.key"
        # a tls.config.file that does not exist, so that no /etc/rocketmq/tls.properties of the
        # host (the default, for Java and for us) takes part
        self.no_config_file = d / "no-such-tls.properties"


def make_certs(ctx):
    openssl = shutil.which("openssl")
    if not openssl:
        raise Fail("openssl not found (the TLS scenarios make their certificates with it): apt-get install -y openssl")
    certs = Certs(ctx.dir / "certs")
    d = certs.dir
    d.mkdir(parents=True, exist_ok=True)
    log = d / "openssl.log"

    def run(*args):
        with open(log, "ab") as out:
            out.write(("$ openssl " + " ".join(map(str, args)) + "\n").encode())
            out.flush()
            r = subprocess.run([openssl, *map(str, args)], cwd=d, stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise Fail(f"openssl {args[0]} failed (exit {r.returncode})", [("openssl", log)])

    def key(path):
        run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)

    def ca(name, cert, key_path):
        key(key_path)
        run("req", "-x509", "-new", "-key", key_path, "-sha256", "-days", 2, "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-out", cert)

    def leaf(name, cert, key_path, ca_cert, ca_key, ext):
        key(key_path)
        csr = d / f"{cert.stem}.csr"
        run("req", "-new", "-key", key_path, "-subj", f"/CN={name}", "-out", csr)
        ext_file = d / f"{cert.stem}.ext"
        ext_file.write_text(ext)
        run("x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-set_serial", random.randrange(1, 2**62),
            "-days", 2, "-sha256", "-extfile", ext_file, "-out", cert)

    leaf_ext = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    ca("rmq-interop test CA", certs.ca, d / "ca.key")
    leaf("localhost", certs.server_cert, certs.server_key, certs.ca, d / "ca.key",
         leaf_ext + "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", certs.server_key, "-out", certs.server_key_enc,
        "-passout", f"pass:{certs.server_key_password}")
    leaf("rmq-interop client", certs.client_cert, certs.client_key, certs.ca, d / "ca.key",
         leaf_ext + "extendedKeyUsage=clientAuth\n")
    ca("rmq-interop rogue CA", certs.rogue_ca, d / "rogue-ca.key")
    leaf("rmq-interop rogue client", certs.rogue_client_cert, certs.rogue_client_key, certs.rogue_ca,
         d / "rogue-ca.key", leaf_ext + "extendedKeyUsage=clientAuth\n")
    return certs


def java_tls_client(certs, trust=None, client_cert=False):
    """JVM options of a Java peer (or a broker's outbound side) talking TLS to the NameServer
    and brokers, verifying the server's certificate chain against `trust` (default: the CA;
    Java checks the chain, not the name). With client_cert it offers the client certificate to
    servers that ask for one. Java takes tls.test.mode.enable for the whole JVM: false here, so a
    broker also needs java_tls_broker_port()."""
    flags = ["-Dtls.enable=true", "-Dtls.test.mode.enable=false", "-Dtls.client.authServer=true",
             f"-Dtls.client.trustCertPath={trust or certs.ca}", f"-Dtls.config.file={certs.no_config_file}"]
    if client_cert:
        flags += [f"-Dtls.client.certPath={certs.client_cert}", f"-Dtls.client.keyPath={certs.client_key}"]
    return flags


def java_tls_broker_port(certs):
    """JVM options for a broker's own port: permissive (Java's default: TLS and plaintext)
    with the CA-signed 127.0.0.1 certificate rather than a self-signed one, so that clients
    verifying the server certificate accept the broker too."""
    return ["-Dtls.server.mode=permissive", "-Dtls.test.mode.enable=false",
            f"-Dtls.server.certPath={certs.server_cert}", f"-Dtls.server.keyPath={certs.server_key}",
            f"-Dtls.config.file={certs.no_config_file}"]


def dedup_flags(flags):
    """Keeps the last of each -Dkey=... (the others once)."""
    out, seen = [], set()
    for f in reversed(flags):
        key = f.split("=", 1)[0] if f.startswith("-D") else f
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out[::-1]


def tls_toml(props):
    """Java tls.* server settings as our TOML [tls] section (tls_form "toml")."""
    names = {
        "tls.server.mode": ("mode", str), "tls.server.certPath": ("cert_path", str),
        "tls.server.keyPath": ("key_path", str), "tls.server.keyPassword": ("key_password", str),
        "tls.server.need.client.auth": ("need_client_auth", str), "tls.server.authClient": ("auth_client", bool),
        "tls.server.trustCertPath": ("trust_cert_path", str), "tls.test.mode.enable": ("test_mode", bool),
        "tls.config.file": ("config_file", str),
    }
    lines = ["[tls]"]
    for key, value in props.items():
        name, kind = names[key]
        if kind is bool:
            lines.append(f"{name} = {str(value).lower()}")
        else:
            lines.append(f"{name} = {json.dumps(str(value))}")
    return "\n".join(lines) + "\n"


def remoting_frame(code, opaque=1):
    """A RocketMQ request frame with a JSON header and no body."""
    header = json.dumps({"code": code, "flag": 0, "language": "JAVA", "opaque": opaque,
                         "serializeTypeCurrentRPC": "JSON", "version": 0}).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header


def read_reply(sock):
    """Reads one frame; returns its JSON header as a dict (None on EOF before a whole frame)."""
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    head = exactly(4)
    if head is None:
        return None
    frame = exactly(struct.unpack(">I", head)[0])
    if frame is None:
        return None
    header_len = struct.unpack(">I", frame[:4])[0] & 0xFFFFFF
    return json.loads(frame[4:4 + header_len])


def plaintext_probe(addr, timeout=10):
    """Sends GET_BROKER_CLUSTER_INFO (106) in plaintext. Returns "closed" when the server closes
    the connection without a byte, "answered" on a reply, "bytes" on other bytes, "open" when it
    neither answers nor closes within timeout."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        try:
            s.sendall(remoting_frame(106))
            data = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return "closed"
        except socket.timeout:
            return "open"
        if not data:
            return "closed"
        return "answered" if len(data) >= 8 else "bytes"


def tls_ask(addr, ca, cert=None, key=None, timeout=10):
    """GET_BROKER_CLUSTER_INFO over TLS with Python's ssl (independent of our CLI and of
    Java): the server certificate must chain to `ca` and name 127.0.0.1 (hostname check on);
    optionally presents a client certificate. Returns (reply header, TLS version, cipher);
    raises ssl.SSLError / OSError."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = True
    if cert:
        context.load_cert_chain(str(cert), str(key))
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as raw:
        with context.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(remoting_frame(106, opaque=7))
            reply = read_reply(s)
            if reply is None:
                raise ConnectionError("closed without a reply")
            return reply, s.version(), s.cipher()[0]


def ours_log(proc):
    return ANSI.sub("", read_text(proc.stderr))


def handshake_failures(ns):
    """TLS handshakes our server logged as failed."""
    return re.findall(r"TLS handshake failed: (.*)", ours_log(ns)) if ns.kind == "ours" else []


def broker_tls_counts(broker):
    """(TLS connections accepted by the broker's port, TLS connections the broker opened) from
    its Java logs (5.x: remoting.log; 4.9.x here: broker.log)."""
    text = "".join(read_text(p) for p in sorted(broker.log.parent.glob("*.log")))
    return (text.count("Handlers prepended to channel pipeline to establish SSL connection"),
            text.count("Prepend SSL handler"))


def cluster_brokers(doc):
    """{brokerName: {id: addr}} of a `rmq-namesrv admin --json clusterList` document."""
    table = (doc.get("result") or {}).get("brokerAddrTable") or {}
    return {name: {str(k): v for k, v in (b.get("brokerAddrs") or {}).items()} for name, b in table.items()}


# ---------------------------------------------------------------------------------------------
# scenarios

SCENARIOS = []


def scenario(name, modes=("ours", "java", "java4")):
    def register(fn):
        SCENARIOS.append((name, fn, modes))
        return fn
    return register


def produce_consume_probe(ctx, line, ns, broker, jvm=()):
    """Shared body: broker registered; line-`line` producer sends N, consumer receives N;
    missing topic -> TOPIC_NOT_EXIST (17); route of the new topic names the broker. jvm: JVM
    options of every peer (tls.*)."""
    n = ctx.count
    topic = ctx.uniq(f"interop{line}")
    r = ctx.peer(line, "Producer", ["--namesrv", ns, "--topic", topic, "--count", n, "--prefix", "p"], jvm=jvm)
    check(r["succeeded"] == n and r["brokers"] == [broker.broker_name], f"producer: {compact(r)}", r["_logs"])
    ctx.peer(line, "Consumer", ["--namesrv", ns, "--topic", topic, "--group", ctx.uniq("cg"),
                                "--count", n, "--prefix", "p", "--timeout-s", 60], jvm=jvm)
    r = ctx.peer(line, "RouteProbe", ["--namesrv", ns, "--topic", ctx.uniq("missing"), "--expect", "missing"],
                 jvm=jvm)
    check(r["code"] == 17, f"missing topic: expected code 17, got {compact(r)}", r["_logs"])
    r = ctx.peer(line, "RouteProbe", ["--namesrv", ns, "--topic", topic, "--brokers", broker.broker_name], jvm=jvm)
    check(route_addrs(r, broker.broker_name) == {str(broker.broker_id): broker.addr},
          f"route of {topic}: {compact(r)}", r["_logs"])
    return topic


@scenario("broker5-produce-consume")
def s_broker5(ctx):
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-a")
    ctx.wait_registered(ns.addr, broker)
    produce_consume_probe(ctx, "5", ns.addr, broker)


@scenario("broker4-produce-consume")
def s_broker4(ctx):
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("4", ns.addr, "broker-4")
    # registered: the 4.9.x client sees the broker's own topic (a broker registers its name)
    ctx.peer("4", "RouteProbe", ["--namesrv", ns.addr, "--topic", broker.broker_name,
                                 "--brokers", broker.broker_name, "--ids", "0", "--wait-s", 60])
    ctx.wait_registered(ns.addr, broker)
    produce_consume_probe(ctx, "4", ns.addr, broker)


@scenario("master-slave5")
def s_master_slave(ctx):
    ns = ctx.start_namesrv()
    master = ctx.start_broker("5", ns.addr, "broker-ms", 0, role="ASYNC_MASTER")
    slave = ctx.start_broker("5", ns.addr, "broker-ms", 1, role="SLAVE")
    ctx.wait_registered(ns.addr, master, ids="0,1")
    r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", "broker-ms", "--ids", "0,1", "--wait-s", 30])
    check(route_addrs(r, "broker-ms") == {"0": master.addr, "1": slave.addr}, f"route: {compact(r)}", r["_logs"])

    # The slave learns the master's HA address from the NameServer's REGISTER_BROKER answer
    # (haServerAddr) and connects to it: ask both brokers for their HA runtime info.
    def ha_ok():
        rs = ctx.admin(ns.addr, f"haStatus {slave.addr}", f"haStatus {master.addr}")
        s, m = rs
        good = (s.get("ok") and s.get("masterAddr") == master.ha_addr and m.get("ok")
                and m.get("master") and len(m.get("slaves", [])) >= 1)
        ha_ok.last = rs
        return good

    ha_ok.last = None
    try:
        wait_until("the slave's HA connection to the master", 45, 1, ha_ok)
    except Fail as e:
        raise Fail(f"{e}; last: {[compact(x) for x in ha_ok.last or []]}", ctx.logs)
    # a client of the pair: produce to the master, consume (from master or slave)
    n = ctx.count
    topic = ctx.uniq("ms")
    ctx.peer("5", "Producer", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "p"])
    ctx.peer("5", "Consumer", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", n, "--prefix", "p", "--timeout-s", 60])


@scenario("broker-sigkill-and-restart5")
def s_sigkill(ctx):
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-k")
    ctx.wait_registered(ns.addr, broker)
    n = ctx.count
    topic = ctx.uniq("kill")
    ctx.peer("5", "Producer", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "p"])
    ctx.stop(broker, signal.SIGKILL, timeout=10)
    # the connection closes with the process: routes must go well before the 120 s expiry
    r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", topic, "--expect", "missing", "--wait-s", 30])
    check(r["elapsedMs"] < 15000, f"route disappeared only after {r['elapsedMs']} ms", r["_logs"])
    print(f"# {ctx.name}: route gone {r['elapsedMs']} ms after the probe started (SIGKILL before it)", flush=True)
    (c,) = ctx.admin(ns.addr, "clusterList")
    check(broker.broker_name not in c.get("brokers", {}), f"cluster info still lists the killed broker: {compact(c)}",
          c["_logs"])
    broker = ctx.restart_broker(broker)
    r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", topic, "--brokers", broker.broker_name,
                                     "--wait-s", 60])
    check(route_addrs(r, broker.broker_name) == {"0": broker.addr}, f"route after restart: {compact(r)}", r["_logs"])
    ctx.peer("5", "Consumer", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", n, "--prefix", "p", "--timeout-s", 60])


@scenario("broker-sigterm-unregister5")
def s_sigterm(ctx):
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-t")
    ctx.wait_registered(ns.addr, broker)
    topic = ctx.uniq("term")
    ctx.peer("5", "Producer", ["--namesrv", ns.addr, "--topic", topic, "--count", 2, "--prefix", "p"])
    # The shutdown hook first sends UNREGISTER_BROKER (sync, logged), then takes ~10 s to stop
    # its services before the process (and its NameServer connection) goes away. A route that
    # disappears while the broker still runs was removed by the unregistration itself.
    t0 = time.monotonic()
    broker.popen.send_signal(signal.SIGTERM)
    ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", topic, "--expect", "missing", "--wait-s", 20])
    gone_while_alive = broker.alive()
    ctx.stop(broker, signal.SIGTERM, timeout=60)
    took = time.monotonic() - t0
    check(broker.popen.returncode is not None, "broker did not exit on SIGTERM")
    log = read_text(broker.log)
    check(f"unregisterBroker OK, NamesrvAddr: {ns.addr}" in log,
          f"broker log has no 'unregisterBroker OK' for {ns.addr} (exit after {took:.1f} s)", ctx.logs)
    print(f"# {ctx.name}: broker exited {took:.1f} s after SIGTERM; route gone "
          f"{'before' if gone_while_alive else 'by the time'} it exited", flush=True)
    ctx.admin(ns.addr, f"clusterWait {broker.broker_name} - 10")


@scenario("two-namesrvs-failover5")
def s_two_namesrvs(ctx):
    a = ctx.start_namesrv("namesrv-a")
    b = ctx.start_namesrv("namesrv-b")
    both = f"{a.addr};{b.addr}"
    broker = ctx.start_broker("5", both, "broker-2ns")
    ctx.wait_registered(a.addr, broker)
    ctx.wait_registered(b.addr, broker)
    n = ctx.count
    topic = ctx.uniq("twons")
    ctx.peer("5", "Producer", ["--namesrv", both, "--topic", topic, "--count", n, "--prefix", "p"])
    # the incremental registration of the new topic went to both NameServers
    for ns in (a, b):
        ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", topic, "--wait-s", 15])
    ctx.stop(a, signal.SIGKILL, timeout=10)
    ctx.peer("5", "Producer", ["--namesrv", both, "--topic", topic, "--count", n, "--first", n, "--prefix", "p"])
    ctx.peer("5", "Consumer", ["--namesrv", both, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", 2 * n, "--prefix", "p", "--timeout-s", 60])
    r = ctx.peer("5", "RouteProbe", ["--namesrv", both, "--topic", ctx.uniq("missing"), "--expect", "missing"])
    check(r["code"] == 17, f"missing topic via {both}: {compact(r)}", r["_logs"])
    # the broker keeps registering with the survivor (heartbeat every 30 s is not awaited here)
    ctx.wait_registered(b.addr, broker, timeout=5)


# ---------------------------------------------------------------------------------------------
# the HTTP address server: our /rocketmq/{subgroup} as `rocketmq.namesrv.domain` of Java peers

# One line of host:port entries separated by ";" (Java splits on ";" and trims nothing), an
# optional trailing newline.
NSADDR_BODY = re.compile(r"[^\s;]+(?:;[^\s;]+)*\n?")


def http_get(hostport, path, timeout=5):
    """GET http://hostport{path} with the headers Java's HttpTinyClient sends; returns (status,
    Content-Type, body text)."""
    host, port = hostport.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", path, headers={
            "Client-Version": "V5_5_0", "Metaq-Client-RequestTS": str(int(time.time() * 1000)),
            "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read().decode("utf-8", errors="replace")
    finally:
        conn.close()


def check_nsaddr_body(http_addr, path, expected, logs):
    """GET path must answer 200, text/plain, exactly `expected` (a list) as one `;`-separated
    line without spaces; also read the way Java's DefaultTopAddressing does (trim, first line,
    split on ";")."""
    try:
        status, ctype, body = http_get(http_addr, path)
    except OSError as e:
        raise Fail(f"GET http://{http_addr}{path}: {e}", logs)
    check(status == 200 and ctype.startswith("text/plain"),
          f"GET {path}: {status} {ctype!r} {body[:200]!r} (want 200 text/plain)", logs)
    check(NSADDR_BODY.fullmatch(body), f"GET {path}: body {body!r} is not one line of ';'-separated "
          f"host:port entries without spaces", logs)
    first = body.strip()
    for sep in ("\r", "\n"):
        first = first.split(sep, 1)[0]
    check(first.split(";") == expected, f"GET {path}: {first.split(';')} as Java reads it, want {expected}", logs)
    return body


def ours_requests(http_addr):
    """Requests answered per request name (all response codes) from our /metrics."""
    status, _, text = http_get(http_addr, "/metrics")
    if status != 200:
        raise Fail(f"GET /metrics on {http_addr}: {status}")
    counts = {}
    for m in re.finditer(r'^rmq_namesrv_requests_total\{([^}]*)\}\s+(\S+)$', text, re.M):
        name = re.search(r'\brequest="([^"]*)"', m.group(1))
        if name:
            counts[name.group(1)] = counts.get(name.group(1), 0) + float(m.group(2))
    return counts


def java_logs_text(home):
    """Every log file a Java process wrote under home/logs."""
    return "".join(read_text(p) for p in sorted((Path(home) / "logs").rglob("*.log")))


def address_server_peer_jvm(http_addr):
    """JVM option of a Java peer that finds its NameServers by the address server (the colon in
    the domain makes the client ask http://{http_addr}/rocketmq/nsaddr, no default port 8080)."""
    return [f"-Drocketmq.namesrv.domain={http_addr}"]


def nsaddr_scenario(ctx, line, fleet):
    """A `line` broker and client that know no NameServer, only our HTTP address server; see
    s_nsaddr5 / s_nsaddr4."""
    http_addr = f"127.0.0.1:{free_port()}"
    if fleet:
        # A serves the fleet list [A, B] from http.nsaddr (spaces in the setting on purpose: the
        # body must not have them); B's HTTP port is only asked for its /metrics
        b_http = f"127.0.0.1:{free_port()}"
        b = ctx._start_ours("namesrv-b", extra_args=["--http-listen", b_http])
        b.http = b_http
        a_addr = f"127.0.0.1:{free_port()}"
        home = ctx.dir / "namesrv-a-config"
        home.mkdir(parents=True, exist_ok=True)
        config = home / "namesrv.toml"
        config.write_text(f'[http]\nnsaddr = " {a_addr} ; {b.addr} "\n')
        a = ctx._start_ours("namesrv-a", config=config, listen=a_addr,
                            extra_args=["--http-listen", http_addr])
        check(a.addr == a_addr, f"namesrv-a listens on {a.addr}, not {a_addr}", ctx.logs)
        servers = [a, b]
    else:
        # the default answer: our own (specific) remoting address
        a = ctx._start_ours("namesrv", extra_args=["--http-listen", http_addr])
        servers = [a]
    a.http = http_addr
    expected = [ns.addr for ns in servers]
    check(all(x.startswith("127.0.0.1:") for x in expected), f"the list to serve is not 127.0.0.1 only: {expected}")
    for ns in servers:
        wait_until(f"our HTTP port {ns.http}", 10, 0.1, lambda: port_open(ns.http))

    # the body, as a client and a broker ask for it (a client with a unit name adds -UNIT?nofix=1)
    body = check_nsaddr_body(http_addr, "/rocketmq/nsaddr", expected, ctx.logs)
    check_nsaddr_body(http_addr, "/rocketmq/nsaddr-unit?nofix=1", expected, ctx.logs)
    print(f"# {ctx.name}: GET /rocketmq/nsaddr and /rocketmq/nsaddr-unit?nofix=1 answer {body!r}", flush=True)

    # the broker: no namesrvAddr anywhere, only the address server
    broker = ctx.start_broker(line, None, f"broker-nsaddr{line}", address_server=http_addr)
    booted = time.monotonic()
    conf = read_text(broker.conf)
    check(not re.search(r"^namesrvAddr=", conf, re.M) and f"rmqAddressServerDomain={http_addr}\n" in conf
          and "fetchNamesrvAddrByAddressServer=true\n" in conf, f"broker.conf:\n{conf}", ctx.logs)
    check(not any("rocketmq.namesrv.addr" in arg for arg in broker.argv), f"broker argv: {broker.argv}")
    environ = Path(f"/proc/{broker.pid}/environ").read_bytes().split(b"\0")
    check(not any(e.startswith(b"NAMESRV_ADDR=") for e in environ), "NAMESRV_ADDR in the broker's environment")
    for ns in servers:
        ctx.wait_registered(ns.addr, broker, timeout=100)
    registered_after = time.monotonic() - booted
    changed = re.findall(r"name server address changed, old: (\S+) new: (\S+)", java_logs_text(broker.home))
    check(changed and changed[0][0] == "null" and sorted(changed[0][1].split(";")) == sorted(expected),
          f"the broker's log does not show the list {';'.join(expected)} fetched from the address server "
          f"(found {changed})", ctx.logs)
    print(f"# {ctx.name}: broker fetched {changed[0][1]} from http://{http_addr}/rocketmq/nsaddr and was in "
          f"cluster info of {len(servers)} NameServer(s) {registered_after:.1f} s after its boot", flush=True)

    # the client: neither setNamesrvAddr nor -Drocketmq.namesrv.addr nor NAMESRV_ADDR (the peer
    # refuses to run with any of them), only -Drocketmq.namesrv.domain
    jvm = address_server_peer_jvm(http_addr)
    ws = f"http://{http_addr}/rocketmq/nsaddr"
    lookups_before = sum(ours_requests(ns.http).get("GET_ROUTEINFO_BY_TOPIC", 0) for ns in servers)
    n = ctx.count
    topic = ctx.uniq(f"nsaddr{line}")
    r = ctx.peer(line, "Producer", ["--address-server", "--topic", topic, "--count", n, "--prefix", "p"], jvm=jvm)
    check(r["succeeded"] == n and r["brokers"] == [broker.broker_name], f"producer: {compact(r)}", r["_logs"])
    check(r.get("fetchUrl") == ws and sorted(r.get("nameServers") or []) == sorted(expected),
          f"producer: asks {r.get('fetchUrl')}, holds NameServers {r.get('nameServers')}; want {ws}, "
          f"{expected}", r["_logs"])
    producer_home = Path(r["_logs"][0][1]).parent
    c = ctx.peer(line, "Consumer", ["--address-server", "--unit-name", "unit", "--topic", topic,
                                    "--group", ctx.uniq("cg"), "--count", n, "--prefix", "p", "--timeout-s", 60],
                 jvm=jvm)
    check(c.get("fetchUrl") == f"{ws}-unit?nofix=1" and sorted(c.get("nameServers") or []) == sorted(expected),
          f"consumer (unit name): asks {c.get('fetchUrl')}, holds NameServers {c.get('nameServers')}; want "
          f"{ws}-unit?nofix=1, {expected}", c["_logs"])
    consumer_home = Path(c["_logs"][0][1]).parent
    for who, home in (("producer", producer_home), ("consumer", consumer_home)):
        got = re.findall(r"name server address changed, old=(\S+), new=(\S+)", java_logs_text(home))
        check(got and got[0][0] == "null" and sorted(got[0][1].split(";")) == sorted(expected),
              f"the {who}'s client log does not show the list fetched from the address server (found {got})",
              [(f"{who} logs", p) for p in sorted((home / "logs").rglob("*.log"))])
    # ... and their lookups reached the NameServers (the Java client keeps no route cache across
    # processes: each peer asked a NameServer of the fetched list for the topic's route)
    lookups = sum(ours_requests(ns.http).get("GET_ROUTEINFO_BY_TOPIC", 0) for ns in servers) - lookups_before
    registrations = [ours_requests(ns.http).get("REGISTER_BROKER", 0) for ns in servers]
    check(lookups >= 2, f"our /metrics count {lookups} route lookups during the client run (want >= 2)", ctx.logs)
    check(all(x > 0 for x in registrations), f"REGISTER_BROKER per NameServer: {registrations}", ctx.logs)
    # control: the same producer with a domain where nothing listens knows no NameServer and
    # sends nothing (no other source of addresses)
    dead = f"127.0.0.1:{free_port()}"
    x = ctx.peer(line, "Producer", ["--address-server", "--topic", topic, "--count", 1, "--prefix", "x",
                                    "--timeout-s", 3], jvm=address_server_peer_jvm(dead), expect_ok=False)
    check(not x["ok"] and x.get("succeeded") == 0 and x.get("nameServers") in ([], None),
          f"producer with the address server {dead} (nothing listening): {compact(x)}", x["_logs"])
    print(f"# {ctx.name}: producer sent {n} and consumer (unit name) received {n} with NameServers "
          f"{';'.join(expected)} from the address server; /metrics: {lookups:g} route lookups during the run, "
          f"REGISTER_BROKER {', '.join(f'{x:g}' for x in registrations)}", flush=True)


@scenario("nsaddr5", modes=("ours",))
def s_nsaddr5(ctx):
    """Address server, 5.x: our server A answers /rocketmq/nsaddr with the fleet A;B (http.nsaddr);
    a 5.5.0 broker with fetchNamesrvAddrByAddressServer=true, rmqAddressServerDomain=A's HTTP
    port and no namesrvAddr registers with A and B; 5.5.0 producer and consumer (unit name)
    with only -Drocketmq.namesrv.domain produce and consume N."""
    nsaddr_scenario(ctx, "5", fleet=True)


@scenario("nsaddr4", modes=("ours",))
def s_nsaddr4(ctx):
    """Address server, 4.9.x: our server answers its own address; a 4.9.7 broker and the 4.9.8
    client find it by the address server only."""
    nsaddr_scenario(ctx, "4", fleet=False)


# Server-side time stamps of our log lines (tracing: RFC 3339, UTC, microseconds).
OURS_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z\s+(\w+)\s+(.*)$")


def ours_log_events(ns):
    """Our server's log as (epoch seconds, level, rest of line), ANSI colours removed."""
    events = []
    for line in ours_log(ns).splitlines():
        m = OURS_LOG_LINE.match(line)
        if m:
            stamp = datetime.strptime(m.group(1)[:26], "%Y-%m-%dT%H:%M:%S.%f" if "." in m.group(1)
                                      else "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
            events.append((stamp.timestamp(), m.group(2), m.group(3)))
    return events


@scenario("graceful-drain5", modes=("ours",))
def s_graceful_drain5(ctx):
    """Graceful drain (server.shutdown_gracefully, shutdown_wait 8 s, TOML --config): a 5.5.0
    client (RouteLoop) looks routes up from the NameServer continuously while it is SIGTERMed
    and drains. Every lookup before and during the drain succeeds; the client's requests carry
    version > 475 (V5_3_1); the server answered some of them GO_AWAY (its debug log: on a
    connection opened before the drain; its `go_away=` count > 0) and served the client's retries
    on a connection opened during the drain; the client log shows the GO_AWAY it received; the
    server exits 0 after the window."""
    wait_s = 8
    home = ctx.dir / "namesrv-config"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "namesrv.toml"
    config.write_text(f'[server]\nshutdown_gracefully = true\nshutdown_wait = "{wait_s}s"\n')
    ns = ctx._start_ours("namesrv", config=config, extra_args=["--log-level", "info,rmq_actors::connection=debug"])
    broker = ctx.start_broker("5", ns.addr, "broker-drain")
    ctx.wait_registered(ns.addr, broker)

    # the route lookups: a Java 5.5.0 client in the background until the stop file appears
    label = "routeloop5"
    lhome = ctx.home(label)
    stop_file = lhome / "stop"
    argv = [java_bin(), *PEER_JVM, f"-Duser.home={lhome}", "-cp", client_classpath("5"), "rmqinterop.RouteLoop",
            "--namesrv", ns.addr, "--topic", broker.broker_name, "--broker", broker.broker_name,
            "--stop-file", str(stop_file), "--max-count", "5000", "--max-s", str(wait_s + 90),
            "--interval-ms", "20", "--timeout-ms", "3000"]
    (lhome / "argv.txt").write_text(" ".join(argv) + "\n")
    loop = ctx.spawn(label, argv, lhome)
    loop_logs = [(f"{label} stdout", loop.stdout), (f"{label} stderr", loop.stderr)]

    def ready():
        if not loop.alive():
            raise Fail(f"RouteLoop exited with {loop.popen.returncode} before its first lookup succeeded",
                       loop_logs + ctx.logs)
        return "READY" in read_text(loop.stdout).splitlines()

    wait_until("RouteLoop's first successful route lookup", 60, 0.2, ready)
    time.sleep(1.0)  # some lookups before the drain

    sigterm_at = time.time()
    ns.popen.send_signal(signal.SIGTERM)

    def drain_over():
        check(loop.alive(), f"RouteLoop exited ({loop.popen.returncode}) during the drain", loop_logs + ctx.logs)
        exited = not ns.alive()  # before reading the log: the line may come just before the exit
        if "drain over; GO_AWAY answers given" in ours_log(ns):
            return "drain over"
        return "exited" if exited else None

    seen = wait_until("our server's 'drain over' log line", wait_s + 20, 0.1, drain_over)
    stop_file.write_text("stop\n")
    try:
        ns.popen.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail("our server did not exit within 30 s after the drain", ctx.logs)
    exited_after = time.time() - sigterm_at
    try:
        loop.popen.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail("RouteLoop did not stop within 30 s of the stop file", loop_logs + ctx.logs)
    check(seen == "drain over", f"our server exited ({ns.popen.returncode}) without logging 'drain over'", ctx.logs)
    check(ns.popen.returncode == 0, f"our server exited with {ns.popen.returncode} after the drain", ctx.logs)

    results = [json.loads(t[len("RESULT "):]) for t in read_text(loop.stdout).splitlines() if t.startswith("RESULT ")]
    check(results and results[-1].get("ok") and loop.popen.returncode == 0,
          f"RouteLoop: exit {loop.popen.returncode}, {compact(results[-1]) if results else 'no RESULT line'}",
          loop_logs + ctx.logs)
    r = results[-1]

    # the drain as our server saw it
    events = ours_log_events(ns)
    starts = [(ts, rest) for ts, _, rest in events if "draining: 5.x clients are answered GO_AWAY" in rest]
    overs = [(ts, rest) for ts, _, rest in events if "drain over; GO_AWAY answers given" in rest]
    check(len(starts) == 1 and len(overs) == 1, f"expected one drain start and one drain over line, got "
          f"{len(starts)} and {len(overs)}", ctx.logs)
    drain_start, start_line = starts[0]
    drain_end, over_line = overs[0]
    m = re.search(r"\bgo_away=(\d+)", over_line)
    check(m, f"no go_away=<count> in {over_line!r}", ctx.logs)
    go_away = int(m.group(1))
    told = re.search(r"\bconnections=(\d+)", start_line)
    check("name server stopped" in ours_log(ns), "our server's log has no 'name server stopped'", ctx.logs)

    # the client's requests: version > 475 (V5_3_1), so the server may answer them GO_AWAY
    versions = r.get("requestVersions") or []
    check(versions and all(v > 475 for v in versions),
          f"the client's GET_ROUTEINFO_BY_TOPIC requests carry versions {versions} (need > 475; "
          f"MQVersion.CURRENT_VERSION {r.get('currentVersion')})", loop_logs)

    # every lookup before and during the drain succeeded: those answered before the drain ended,
    # and those started more than 0.5 s before its end (whenever answered); later ones may fail
    # as the server stops
    end_ms, start_ms = drain_end * 1000, drain_start * 1000
    lookups = r["lookups"]
    must = [x for x in lookups if x[1] <= end_ms or x[0] < end_ms - 500]
    after = [x for x in lookups if not (x[1] <= end_ms or x[0] < end_ms - 500)]
    bad = [x for x in must if x[2] != 0]
    during = [x for x in lookups if start_ms < x[1] <= end_ms]
    before = [x for x in lookups if x[1] <= start_ms]
    if bad:
        first = [f for f in r.get("failures", []) if f["endMs"] <= end_ms or f["startMs"] < end_ms - 500][:5]
        raise Fail(f"{len(bad)} of {len(must)} route lookups before/during the drain failed "
                   f"(drain {drain_start:.3f}..{drain_end:.3f}): {json.dumps(first)[:1500]}", loop_logs + ctx.logs)
    check(len(during) >= 20, f"only {len(during)} route lookups answered during the {wait_s} s drain", loop_logs)
    head_gap = (min(x[1] for x in during) - start_ms) / 1000
    tail_gap = (end_ms - max(x[1] for x in during)) / 1000
    check(head_gap < 2 and tail_gap < 2,
          f"the lookups do not cover the drain: first answered {head_gap:.2f} s after its start, last "
          f"{tail_gap:.2f} s before its end", loop_logs)

    # the server's side: GO_AWAY answers to the client's route lookups on a connection opened
    # before the drain, the retries (and later lookups) served on one opened during it
    opened, served, went_away, all_codes = {}, {}, {}, {}
    for ts, _, rest in events:
        c = re.search(r"conn\{conn=(\S+) ", rest)
        if not c:
            continue
        conn = c.group(1)
        if rest.endswith("connection opened"):
            opened[conn] = ts
        elif "draining: GO_AWAY" in rest:
            code = re.search(r"\bcode=(\S+)", rest)
            code = code.group(1) if code else "?"
            all_codes[code] = all_codes.get(code, 0) + 1
            if code.startswith("GET_ROUTEINFO_BY_TOPIC"):
                went_away.setdefault(conn, []).append(ts)
        elif re.search(r"\brequest code=GET_ROUTEINFO_BY_TOPIC", rest):
            served.setdefault(conn, []).append(ts)
    # each request is logged once as "request", then (GO_AWAY'd) once more as "draining: GO_AWAY"
    for conn, stamps in went_away.items():
        for ts in stamps:
            if served.get(conn):
                served[conn].remove(min(served[conn], key=lambda s: abs(s - ts)))
    route_go_away = sum(len(v) for v in went_away.values())
    check(go_away > 0, f"the server gave no GO_AWAY answer during the drain ({over_line.strip()})", ctx.logs)
    check(route_go_away > 0, "our debug log shows no GET_ROUTEINFO_BY_TOPIC answered GO_AWAY", ctx.logs)
    check(sum(all_codes.values()) == go_away, f"the debug log shows {sum(all_codes.values())} GO_AWAY answers "
          f"({all_codes}) but the server counted go_away={go_away}", ctx.logs)
    check(all(opened.get(c, 0) < drain_start for c in went_away),
          f"GO_AWAY on connection(s) opened during the drain: {sorted(went_away)}", ctx.logs)
    fresh = {c for c, stamps in served.items() if opened.get(c, 0) > drain_start
             and any(drain_start < ts <= drain_end for ts in stamps)}
    check(fresh, "no route lookup served on a connection opened during the drain (the client's reconnect)",
          ctx.logs)
    total_served = sum(len(v) for v in served.values())
    check(total_served >= r["succeeded"], f"the server served {total_served} route lookups, the client counts "
          f"{r['succeeded']} successful ones (answered by a cache?)", loop_logs + ctx.logs)

    # the client's side of the GO_AWAY (NettyRemotingClient logs it, INFO)
    client_log = "".join(read_text(p) for p in sorted((lhome / "logs").rglob("*.log")))
    received = len(re.findall(r"Receive go away from channelId=\S+, channel=[^\n]*?\]$", client_log, re.M))
    reconnects = client_log.count(", recreate the channelId=")
    check(received >= 1, "the client's log shows no 'Receive go away' (NettyRemotingClient)", loop_logs)
    check("GO_AWAY twice" not in client_log, "the client received GO_AWAY twice for one request", loop_logs)

    print(f"# {ctx.name}: request version(s) {versions} (client MQVersion {r.get('currentVersion')}); drain "
          f"{drain_end - drain_start:.2f} s over {told.group(1) if told else '?'} connection(s), server exit 0 "
          f"{exited_after:.1f} s after SIGTERM", flush=True)
    print(f"# {ctx.name}: lookups: {len(before)} before the drain, {len(during)} during it, all succeeded; "
          f"{len(after)} after it ({sum(1 for x in after if x[2] != 0)} failed, server stopping); stop: "
          f"{r.get('stop')}", flush=True)
    print(f"# {ctx.name}: GO_AWAY: server go_away={go_away} (by request: {json.dumps(all_codes, sort_keys=True)}; "
          f"the route lookups' on connection(s) {', '.join(sorted(went_away))}); retries served on "
          f"{', '.join(sorted(fresh))} opened during the drain; client log: {received} GO_AWAY received, "
          f"{reconnects} reconnect(s); server served {total_served} route lookups for the client's "
          f"{r['succeeded']} successes", flush=True)


@scenario("go-client5")
def s_go_client(ctx):
    """Go client (rocketmq-client-go v2, interop/go): missing topic -> topic-not-exist; the
    producer auto-creates a topic (TBW102 route) and sends N; its route lists the broker and
    cluster; a push consumer (fresh group, first offset) receives the N."""
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-go")
    ctx.wait_registered(ns.addr, broker)
    n = ctx.count
    r = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", ctx.uniq("missing"), "--expect", "absent"],
                        peer_timeout=15)
    check(r["result"] == "TOPIC_NOT_EXIST", f"go route of a missing topic: {compact(r)}", r["_logs"])
    topic = ctx.uniq("go")
    r = ctx.native_peer("go", "produce", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "g"])
    check(r["sent"] == n and {q.rsplit(":", 1)[0] for q in r["queues"]} == {broker.broker_name},
          f"go produce: {compact(r)}", r["_logs"])
    r = ctx.native_route("go", ns.addr, topic, broker.broker_name)
    check(r["clusters"] == ["InteropCluster"] and r["write_queues"], f"go route of {topic}: {compact(r)}", r["_logs"])
    ctx.native_peer("go", "consume", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                      "--count", n, "--prefix", "g"])


@scenario("cpp-client5")
def s_cpp_client(ctx):
    """C++ client (rocketmq-client-cpp via PyPI rocketmq 0.4.4, interop/cpp): missing topic ->
    no queues (this client swallows code 17); produce N (auto-create); route lists the broker's
    read queues; a push consumer (fresh group: the broker answers offset 0) receives the N.
    Cross-client on the same broker: Go consumes what C++ produced, C++ what Go produced."""
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-cpp")
    ctx.wait_registered(ns.addr, broker)
    n = ctx.count
    # At debug level the client logs each decoded response ("code:17, remark:JAVA, version:...,
    # ... remark:No topic route info ..."): the empty answer must come from a decoded code 17.
    r = ctx.native_peer("cpp", "route", ["--namesrv", ns.addr, "--topic", ctx.uniq("missing"), "--expect", "absent"],
                        peer_timeout=15, log_level="debug")
    check(r["result"] == "TOPIC_NOT_EXIST" and r["read_queues"] == [], f"cpp route of a missing topic: {compact(r)}",
          r["_logs"])
    client_log = "".join(read_text(p) for p in sorted(r["_home"].glob("logs/rocketmq-cpp/*")))
    check(re.search(r"\(debug\):code:17, ", client_log),
          "cpp route of a missing topic: the C++ client log shows no decoded response with code 17", r["_logs"])
    topic = ctx.uniq("cpp")
    r = ctx.native_peer("cpp", "produce", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "c"])
    check(r["sent"] == n, f"cpp produce: {compact(r)}", r["_logs"])
    r = ctx.native_route("cpp", ns.addr, topic, broker.broker_name)
    queues = r["read_queues"]
    check(set(queues) == {f"{broker.broker_name}:{i}" for i in range(len(queues))},
          f"cpp route of {topic}: queue ids not 0..{len(queues) - 1}: {compact(r)}", r["_logs"])
    ctx.native_peer("cpp", "consume", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                       "--count", n, "--prefix", "c"])
    # cross-client
    ctx.native_peer("go", "consume", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                      "--count", n, "--prefix", "c"])
    topic2 = ctx.uniq("gocpp")
    ctx.native_peer("go", "produce", ["--namesrv", ns.addr, "--topic", topic2, "--count", n, "--prefix", "g"])
    ctx.native_peer("cpp", "consume", ["--namesrv", ns.addr, "--topic", topic2, "--group", ctx.uniq("cg"),
                                       "--count", n, "--prefix", "g"])


@scenario("admin5")
def s_admin(ctx):
    ns = ctx.start_namesrv()
    broker = ctx.start_broker("5", ns.addr, "broker-adm", cluster="AdminCluster")
    ctx.wait_registered(ns.addr, broker)
    t1, t2, t3 = ctx.uniq("adm"), ctx.uniq("adm"), ctx.uniq("adm")
    for t in (t1, t2, t3):
        ctx.peer("5", "Producer", ["--namesrv", ns.addr, "--topic", t, "--count", 1])
    java4 = ctx.mode == "java4"
    steps = [
        # (operation, check(result) -> None or failure text)
        ("clusterList", lambda r: None if r["ok"] and r["clusters"].get("AdminCluster") == ["broker-adm"]
         and r["brokers"]["broker-adm"] == {"cluster": "AdminCluster", "addrs": {"0": broker.addr}} else "wrong"),
        (f"topicRoute {t1}", lambda r: None if r["ok"] and route_addrs(r, "broker-adm") == {"0": broker.addr}
         and r["queues"][0]["perm"] == 6 else "wrong"),
        ("topicRoute no_such_topic_x", lambda r: None if not r["ok"] and r["code"] == 17 else "expected code 17"),
        ("topicList", lambda r: None if r["ok"] and {t1, t2, t3, "broker-adm", "AdminCluster"} <= set(r["topics"])
         else "missing topics"),
        ("topicListByCluster AdminCluster", lambda r: None if r["ok"] and {t1, t2, t3} <= set(r["topics"])
         else "missing topics"),
        ("topicListByCluster NoSuchCluster", lambda r: None if r["ok"] and r["topics"] == [] else "expected empty"),
        ("systemTopicList", lambda r: None if r["ok"] and {"AdminCluster", "broker-adm"} <= set(r["topics"])
         and t1 not in r["topics"] else "wrong"),
        # KV config
        ("kvGet interop_ns k1", lambda r: None if not r["ok"] and r["code"] == 22 else "expected code 22"),
        ("kvList interop_ns", lambda r: None if not r["ok"] and r["code"] == 22 else "expected code 22"),
        ("kvPut interop_ns k1 v1", ok),
        ("kvPut interop_ns k2 v2", ok),
        ("kvPut interop_ns k1 v1b", ok),
        ("kvGet interop_ns k1", lambda r: None if r["ok"] and r["value"] == "v1b" else "expected v1b"),
        ("kvList interop_ns", lambda r: None if r["ok"] and r["table"] == {"k1": "v1b", "k2": "v2"} else "wrong table"),
        ("kvDelete interop_ns k1", ok),
        ("kvGet interop_ns k1", lambda r: None if not r["ok"] and r["code"] == 22 else "expected code 22"),
        ("kvList interop_ns", lambda r: None if r["ok"] and r["table"] == {"k2": "v2"} else "wrong table"),
        ("kvDelete interop_ns no_such_key", ok),
        # write permission
        (f"wipeWritePerm {ns.addr} broker-adm", lambda r: None if r["ok"] and r["count"] >= 3 else "count < 3"),
        (f"topicRoute {t1}", lambda r: None if r["ok"] and r["queues"][0]["perm"] == 4 else "perm != 4"),
        (f"wipeWritePerm {ns.addr} no_such_broker", lambda r: None if r["ok"] and r["count"] == 0 else "count != 0"),
        (f"addWritePerm {ns.addr} broker-adm", lambda r: None if r["ok"] and r["count"] >= 3 else "count < 3"),
        (f"topicRoute {t1}", lambda r: None if r["ok"] and r["queues"][0]["perm"] == 6 else "perm != 6"),
        # delete topic: without and with cluster
        (f"deleteTopic {t1}", ok),
        (f"topicRoute {t1}", lambda r: None if not r["ok"] and r["code"] == 17 else "expected code 17"),
        (f"deleteTopic {t2} AdminCluster", ok),
        (f"topicRoute {t2}", lambda r: None if not r["ok"] and r["code"] == 17 else "expected code 17"),
        (f"deleteTopic {t3} OtherCluster", ok),
        (f"topicRoute {t3}", lambda r: None if r["ok"] else "other cluster's delete removed the topic"),
        ("topicList", lambda r: None if r["ok"] and t1 not in r["topics"] and t2 not in r["topics"]
         and t3 in r["topics"] else "deleted topics still listed"),
        # runtime config
        ("getNamesrvConfig", lambda r: None if r["ok"] and r["configs"].get(ns.addr, {}).get("listenPort")
         == ns.addr.rsplit(":", 1)[1] else "no listenPort of this server"),
    ]
    if not java4:  # 4.9.7 has neither the config black list nor the topic-list switches
        steps += [
            (f"updateNamesrvConfig kvConfigPath={ctx.dir / 'elsewhere.json'}",
             lambda r: None if not r["ok"] and r["code"] == 16 else "black-listed key not refused with 16"),
            (f"updateNamesrvConfig configStorePath={ctx.dir / 'elsewhere.properties'}",
             lambda r: None if not r["ok"] and r["code"] == 16 else "black-listed key not refused with 16"),
            ("updateNamesrvConfig enableAllTopicList=false", ok),
            ("getNamesrvConfig", lambda r: None if r["ok"] and r["configs"][ns.addr].get("enableAllTopicList")
             == "false" else "enableAllTopicList not false"),
            ("topicList", lambda r: None if not r["ok"] and r["code"] == 1 else "expected code 1 (disabled)"),
            ("updateNamesrvConfig enableAllTopicList=true", ok),
            ("topicList", lambda r: None if r["ok"] and t3 in r["topics"] else "topic list not back"),
            ("updateNamesrvConfig enableTopicList=false", ok),
            ("topicListByCluster AdminCluster", lambda r: None if not r["ok"] and r["code"] == 1
             else "expected code 1 (disabled)"),
            ("updateNamesrvConfig enableTopicList=true", ok),
            ("topicListByCluster AdminCluster", lambda r: None if r["ok"] and t3 in r["topics"] else "not back"),
        ]
    steps += [("kvGet interop_ns k2", lambda r: None if r["ok"] and r["value"] == "v2" else "expected v2")]
    results = ctx.admin(ns.addr, *[op for op, _ in steps])
    problems = []
    for (op, verdict), r in zip(steps, results):
        try:
            why = verdict(r)
        except (KeyError, IndexError, TypeError) as e:
            why = f"unexpected shape ({e!r})"
        if why:
            problems.append(f"{op}: {why}: {compact(r)}")
    check(not problems, f"{len(problems)} admin check(s) failed: " + " | ".join(problems),
          results[0]["_logs"] + ctx.logs)


def ok(r):
    return None if r["ok"] else "failed"


def tls_server_props(certs, mode, key="plain", **more):
    """Java tls.* server settings with the CA-signed 127.0.0.1 certificate."""
    props = {"tls.server.mode": mode, "tls.server.certPath": certs.server_cert}
    if key == "encrypted":
        props["tls.server.keyPath"] = certs.server_key_enc
        props["tls.server.keyPassword"] = certs.server_key_password
    else:
        props["tls.server.keyPath"] = certs.server_key
    props["tls.test.mode.enable"] = "false"
    props.update(more)
    props["tls.config.file"] = certs.no_config_file
    return props


def check_tls_front(ctx, ns, certs, plaintext, client=None):
    """The NameServer's port as seen by raw clients: the plaintext request is refused
    (plaintext="closed") or answered ("answered"); Python's ssl verifying chain and name
    (127.0.0.1) gets an answer to GET_BROKER_CLUSTER_INFO; a client trusting another CA refuses
    the server. client: (cert, key) to present. Returns a note for the output."""
    verdict = plaintext_probe(ns.addr)
    check(verdict == plaintext, f"plaintext GET_BROKER_CLUSTER_INFO to {ns.addr}: expected {plaintext}, got {verdict}",
          ctx.logs)
    cert, key = client or (None, None)
    try:
        reply, version, cipher = tls_ask(ns.addr, certs.ca, cert, key)
    except (ssl.SSLError, OSError) as e:
        raise Fail(f"TLS request (CA {certs.ca.name}, hostname 127.0.0.1) to {ns.addr} failed: {e!r}", ctx.logs)
    check(reply.get("code") == 0 and reply.get("opaque") == 7 and reply.get("flag") == 1,
          f"TLS GET_BROKER_CLUSTER_INFO: unexpected reply header {reply}", ctx.logs)
    try:
        tls_ask(ns.addr, certs.rogue_ca, cert, key)
        raise Fail("a client trusting only another CA accepted the server's certificate", ctx.logs)
    except ssl.SSLCertVerificationError:
        pass
    return f"plaintext request {verdict}; Python ssl (chain + name 127.0.0.1): {version} {cipher}"


def tls_connections(ns):
    """From our server's debug log (rmq_actors::connection=debug): {conn id: (tls, set of
    request codes)}."""
    conns = {}
    for line in ours_log(ns).splitlines():
        m = re.search(r"conn\{conn=(\S+) peer=\S+ tls=(true|false)\}.*\brequest code=(\S+)", line)
        if m:
            conns.setdefault(m.group(1), (m.group(2) == "true", set()))[1].add(m.group(3))
    return conns


@scenario("tls-enforcing5")
def s_tls_enforcing5(ctx):
    """NameServer in enforcing mode, configured with Java's tls.* names in a .properties file
    (PBES2-encrypted PKCS#8 key + tls.server.keyPassword; plain key for --namesrv java4). Plaintext request closed without a reply;
    Python ssl verifying chain and name gets answers; our CLI with --tls-ca works, without TLS
    exits 3. A 5.5.0 broker with -Dtls.enable=true verifying the NameServer's certificate
    (tls.client.authServer + trustCertPath) registers (seen by our CLI over TLS); 5.5.0
    producer / consumer / route probe, also verifying, produce and consume N (to the broker over
    TLS too: its permissive port serves the CA-signed certificate); a Java client trusting
    another CA cannot query the NameServer."""
    certs = make_certs(ctx)
    # The 4.9.7 NameServer's Netty reads no PBES2-encrypted key ("PBES2 SecretKeyFactory not
    # available"); 5.5.0 and ours do.
    key = "plain" if ctx.mode == "java4" else "encrypted"
    ns = ctx.start_namesrv(tls=tls_server_props(certs, "enforcing", key=key), tls_form="properties")
    note = check_tls_front(ctx, ns, certs, plaintext="closed")
    print(f"# {ctx.name}: {note}", flush=True)
    provoked = len(handshake_failures(ns))  # the client that trusts another CA
    rc, doc, err = ctx.cli(ns.addr, [], "clusterList")
    check(rc == 3, f"our CLI in plaintext: expected exit 3 (unreachable), got {rc}: {doc} {err}", ctx.logs)
    rc, doc, err = ctx.cli(ns.addr, ["--tls-ca", certs.rogue_ca], "clusterList")
    check(rc == 3, f"our CLI trusting another CA: expected exit 3, got {rc}: {doc} {err}", ctx.logs)
    provoked = len(handshake_failures(ns))
    rc, doc, err = ctx.cli(ns.addr, ["--tls-ca", certs.ca], "clusterList")
    check(rc == 0 and doc and doc.get("ok"), f"our CLI with --tls-ca: exit {rc}: {doc} {err}", ctx.logs)

    broker_jvm = dedup_flags(java_tls_client(certs) + java_tls_broker_port(certs))
    broker = ctx.start_broker("5", ns.addr, "broker-tls", jvm=broker_jvm)
    took = ctx.cli_wait_registered(ns.addr, ["--tls-ca", certs.ca], broker)
    print(f"# {ctx.name}: broker in clusterList (our CLI, --tls-ca) {took:.1f} s after its boot", flush=True)
    peer_jvm = java_tls_client(certs)
    produce_consume_probe(ctx, "5", ns.addr, broker, jvm=peer_jvm)
    accepted, opened = broker_tls_counts(broker)
    check(accepted >= 2 and opened >= 1, f"the broker's remoting log shows {accepted} TLS connection(s) to its port "
          f"(producer and consumer expected) and {opened} TLS connection(s) it opened", ctx.logs)
    unexpected = handshake_failures(ns)[provoked:]
    check(not unexpected, f"our server logged failed TLS handshakes of the broker or peers: {unexpected}", ctx.logs)
    r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", broker.broker_name], expect_ok=False,
                 jvm=java_tls_client(certs, trust=certs.rogue_ca))
    check(not r["ok"] and r.get("code") == -1,
          f"a Java client trusting another CA got an answer from the NameServer: {compact(r)}", r["_logs"])
    if ns.kind == "ours":
        log = ours_log(ns)
        check("plaintext connection refused: TLS is enforced" in log,
              "our server did not log the refused plaintext connection", ctx.logs)
        failed = re.findall(r"TLS handshake failed: (.*)", log)
        print(f"# {ctx.name}: server log: {log.count('plaintext connection refused')} plaintext connection(s) "
              f"refused, {len(failed)} handshake(s) failed ({'; '.join(sorted(set(failed)))})", flush=True)


@scenario("tls-permissive4")
def s_tls_permissive4(ctx):
    """NameServer in permissive mode ([tls] in TOML). A 4.9.7 broker registers in plaintext (its
    own permissive port serves the CA-signed certificate); a 4.9.8 producer with
    -Dtls.enable=true, verifying the certificates of the NameServer and the broker, sends N; a
    plaintext 4.9.8 consumer receives them. Ours: the debug log shows REGISTER_BROKER on a
    plaintext connection and the producer's route lookups on TLS ones; the broker's log shows
    TLS connections to its port."""
    certs = make_certs(ctx)
    ns = ctx.start_namesrv(tls=tls_server_props(certs, "permissive"), tls_form="toml",
                           log_level="info,rmq_actors::connection=debug")
    note = check_tls_front(ctx, ns, certs, plaintext="answered")
    print(f"# {ctx.name}: {note}", flush=True)
    broker = ctx.start_broker("4", ns.addr, "broker-tls4", jvm=java_tls_broker_port(certs))
    ctx.wait_registered(ns.addr, broker)  # plaintext (5.x tools)
    n = ctx.count
    topic = ctx.uniq("tls4")
    r = ctx.peer("4", "Producer", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "t"],
                 jvm=java_tls_client(certs))
    check(r["succeeded"] == n and r["brokers"] == [broker.broker_name], f"TLS producer: {compact(r)}", r["_logs"])
    ctx.peer("4", "Consumer", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", n, "--prefix", "t", "--timeout-s", 60])
    tls_at_broker, opened = broker_tls_counts(broker)
    check(tls_at_broker >= 1, "the broker's log shows no TLS connection (the TLS producer's sends)", ctx.logs)
    check(opened == 0, f"the plaintext broker opened {opened} TLS connection(s)", ctx.logs)
    if ns.kind == "ours":
        conns = tls_connections(ns)
        reg = {c for c, (tls, codes) in conns.items() if any(x.startswith("REGISTER_BROKER") for x in codes)}
        routes_tls = {c for c, (tls, codes) in conns.items()
                      if tls and any(x.startswith("GET_ROUTEINFO_BY_TOPIC") for x in codes)}
        routes_plain = {c for c, (tls, codes) in conns.items()
                        if not tls and any(x.startswith("GET_ROUTEINFO_BY_TOPIC") for x in codes)}
        check(reg and all(not conns[c][0] for c in reg),
              f"REGISTER_BROKER not (only) on plaintext connections: {sorted(reg)}", ctx.logs)
        check(routes_tls, "no GET_ROUTEINFO_BY_TOPIC on a TLS connection (the producer's)", ctx.logs)
        check(routes_plain, "no GET_ROUTEINFO_BY_TOPIC on a plaintext connection (the consumer's)", ctx.logs)
        print(f"# {ctx.name}: server log: REGISTER_BROKER on {len(reg)} plaintext connection(s); route lookups on "
              f"{len(routes_tls)} TLS and {len(routes_plain)} plaintext connection(s); broker log: "
              f"{tls_at_broker} TLS connection(s) to the broker", flush=True)


@scenario("go-client-tls5")
def s_go_client_tls(ctx):
    """Go client (rocketmq-client-go v2 WithTls, which never verifies the server certificate)
    against our server in enforcing mode ([tls] in TOML), with a 5.5.0 broker registering over
    TLS: without --tls the route query fails; with --tls a missing topic is topic-not-exist, the
    producer sends N (to the broker over TLS too), the route lists the broker, a push consumer
    receives the N."""
    certs = make_certs(ctx)
    ns = ctx.start_namesrv(tls=tls_server_props(certs, "enforcing"), tls_form="toml")
    broker_jvm = dedup_flags(java_tls_client(certs) + java_tls_broker_port(certs))
    broker = ctx.start_broker("5", ns.addr, "broker-gotls", jvm=broker_jvm)
    ctx.cli_wait_registered(ns.addr, ["--tls-ca", certs.ca], broker)
    n = ctx.count
    r = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", ctx.uniq("missing"), "--expect", "absent"],
                        peer_timeout=10, expect_ok=False)
    check(not r["ok"] and r.get("result") == "ERROR",
          f"go route without --tls against enforcing TLS: expected a transport error, got {compact(r)}", r["_logs"])
    r = ctx.native_peer("go", "route", ["--tls", "--namesrv", ns.addr, "--topic", ctx.uniq("missing"),
                                        "--expect", "absent"], peer_timeout=15)
    check(r["result"] == "TOPIC_NOT_EXIST", f"go route of a missing topic over TLS: {compact(r)}", r["_logs"])
    topic = ctx.uniq("gotls")
    r = ctx.native_peer("go", "produce", ["--tls", "--namesrv", ns.addr, "--topic", topic, "--count", n,
                                          "--prefix", "g"])
    check(r["sent"] == n and {q.rsplit(":", 1)[0] for q in r["queues"]} == {broker.broker_name},
          f"go produce over TLS: {compact(r)}", r["_logs"])

    def routed():
        x = ctx.native_peer("go", "route", ["--tls", "--namesrv", ns.addr, "--topic", topic], peer_timeout=15,
                            expect_ok=False)
        return x if x.get("ok") and x.get("brokers") == [broker.broker_name] else None

    r = wait_until(f"go route of {topic} over TLS listing {broker.broker_name}", 30, 1, routed)
    check(r["clusters"] == ["InteropCluster"] and r["write_queues"], f"go route of {topic}: {compact(r)}", r["_logs"])
    ctx.native_peer("go", "consume", ["--tls", "--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                      "--count", n, "--prefix", "g"])


@scenario("tls-mtls5")
def s_tls_mtls5(ctx):
    """Mutual TLS: NameServer enforcing with need_client_auth = "require" and auth_client = true
    against the CA ([tls] in TOML). Python ssl and our CLI get answers only with the CA-signed
    client certificate (none, or one of another CA: refused); a 5.5.0 broker presenting the
    client certificate (tls.client.certPath / keyPath, test mode off) registers; 5.5.0 peers
    with the certificate produce and consume N; a Java client without one gets no answer."""
    certs = make_certs(ctx)
    ns = ctx.start_namesrv(tls=tls_server_props(certs, "enforcing", **{
        "tls.server.need.client.auth": "require", "tls.server.authClient": "true",
        "tls.server.trustCertPath": certs.ca}), tls_form="toml")
    note = check_tls_front(ctx, ns, certs, plaintext="closed", client=(certs.client_cert, certs.client_key))
    print(f"# {ctx.name}: {note}", flush=True)
    for label, cert, key in (("no client certificate", None, None),
                             ("a client certificate of another CA", certs.rogue_client_cert, certs.rogue_client_key)):
        try:
            reply = tls_ask(ns.addr, certs.ca, cert, key)
            raise Fail(f"mTLS: a request with {label} was answered: {reply}", ctx.logs)
        except (ssl.SSLError, OSError):
            pass
    mine = ["--tls-ca", certs.ca, "--tls-cert", certs.client_cert, "--tls-key", certs.client_key]
    rc, doc, err = ctx.cli(ns.addr, ["--tls-ca", certs.ca], "clusterList")
    check(rc == 3, f"our CLI without a client certificate: expected exit 3, got {rc}: {doc} {err}", ctx.logs)
    rc, doc, err = ctx.cli(ns.addr, mine, "clusterList")
    check(rc == 0 and doc and doc.get("ok"), f"our CLI with the client certificate: exit {rc}: {doc} {err}", ctx.logs)
    provoked = len(handshake_failures(ns))

    broker_jvm = dedup_flags(java_tls_client(certs, client_cert=True) + java_tls_broker_port(certs))
    broker = ctx.start_broker("5", ns.addr, "broker-mtls", jvm=broker_jvm)
    took = ctx.cli_wait_registered(ns.addr, mine, broker)
    print(f"# {ctx.name}: broker (client certificate) in clusterList {took:.1f} s after its boot", flush=True)
    produce_consume_probe(ctx, "5", ns.addr, broker, jvm=java_tls_client(certs, client_cert=True))
    unexpected = handshake_failures(ns)[provoked:]
    check(not unexpected, f"our server logged failed TLS handshakes of the broker or peers: {unexpected}", ctx.logs)
    r = ctx.peer("5", "RouteProbe", ["--namesrv", ns.addr, "--topic", broker.broker_name], expect_ok=False,
                 jvm=java_tls_client(certs))
    check(not r["ok"] and r.get("code") == -1,
          f"a Java client without a client certificate got an answer: {compact(r)}", r["_logs"])


# ---------------------------------------------------------------------------------------------
# access control (docs/access.md): ACL files, signed raw requests, the audit log

def acl_secret(prefix):
    """A random secret, distinctive enough to grep logs for (it must never appear in them)."""
    return prefix + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(20))


def write_acl_file(path, accounts=(), users=(), global_white=()):
    """An ACL file: 4.x plain_acl.yml `accounts` [(accessKey, secretKey, admin)] plus ACL 2.0
    `users` [(username, password, userType)]; `globalWhiteRemoteAddresses` empty unless given
    (127.0.0.1 there would let every request in unsigned)."""
    lines = ["globalWhiteRemoteAddresses:" + ("" if global_white else " []")]
    lines += [f"  - {json.dumps(w)}" for w in global_white]
    if accounts:
        lines.append("accounts:")
        for ak, sk, admin in accounts:
            lines += [f"  - accessKey: {json.dumps(ak)}", f"    secretKey: {json.dumps(sk)}",
                      f"    admin: {'true' if admin else 'false'}"]
    if users:
        lines.append("users:")
        for name, password, kind in users:
            lines += [f"  - username: {json.dumps(name)}", f"    password: {json.dumps(password)}",
                      f"    userType: {kind}"]
    path.write_text("\n".join(lines) + "\n")


def access_toml(profile=None, acl_file=None, audit_log=None, classes=None, max_failures=None):
    """Our TOML [access] section: profile, files, and per class (policy, networks)."""
    lines = ["[access]"]
    if profile:
        lines.append(f"profile = {json.dumps(profile)}")
    if acl_file:
        lines.append(f"acl_file = {json.dumps(str(acl_file))}")
    if audit_log:
        lines.append(f"audit_log = {json.dumps(str(audit_log))}")
    if max_failures is not None:
        lines.append(f"max_failures = {max_failures}")
    for cls, (policy, networks) in (classes or {}).items():
        lines += [f"[access.{cls}]", f"policy = {json.dumps(policy)}", f"networks = {json.dumps(list(networks))}"]
    return "\n".join(lines) + "\n"


def start_ours_access(ctx, label, toml, log_level=None, extra_args=()):
    """Our server with `toml` (an [access] section) as --config."""
    home = ctx.dir / f"{label}-config"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "namesrv.toml"
    config.write_text(toml)
    extra = (["--log-level", log_level] if log_level else []) + list(extra_args)
    return ctx._start_ours(label, config=config, extra_args=extra)


def access_refusals(http_addr):
    """{(class, reason): count} of rmq_namesrv_access_refusals_total on our /metrics (non-zero)."""
    status, _, text = http_get(http_addr, "/metrics")
    if status != 200:
        raise Fail(f"GET /metrics on {http_addr}: {status}")
    out = {}
    for m in re.finditer(r'^rmq_namesrv_access_refusals_total\{([^}]*)\}\s+(\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if float(m.group(2)):
            out[(labels.get("class"), labels.get("reason"))] = int(float(m.group(2)))
    return out


def rocketmq_signature(ext, body, secret):
    """What Java's AclClientRPCHook computes (docs/access.md#signatures): Base64(HmacSHA1(secret,
    the values of every ext field but Signature ordered by key, then the body)). Keys here are
    ASCII, so Python's order is Java's TreeMap order."""
    import base64
    import hashlib
    import hmac
    content = "".join(ext[k] for k in sorted(ext) if k != "Signature").encode() + body
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def raw_request(addr, code, ext, body=b"", access_key=None, secret=None, timeout=10):
    """One request with a JSON header (extFields `ext`), optionally signed as AclClientRPCHook
    signs (AccessKey + Signature). Returns the reply header (dict)."""
    ext = {k: str(v) for k, v in ext.items()}
    if access_key is not None:
        ext["AccessKey"] = access_key
        ext["Signature"] = rocketmq_signature(ext, body, secret)
    header = json.dumps({"code": code, "flag": 0, "language": "JAVA", "opaque": 11, "extFields": ext,
                         "serializeTypeCurrentRPC": "JSON", "version": 479}).encode()
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body)
        reply = read_reply(s)
    if reply is None:
        raise Fail(f"request {code} to {addr}: connection closed without a reply")
    return reply


def audit_events(path):
    """The JSON lines of our audit log at `path` (and its rotated files)."""
    events = []
    for p in sorted(Path(path).parent.glob(Path(path).name + "*")):
        for line in read_text(p).splitlines():
            if line.strip():
                try:
                    events.append(json.loads(line))
                except ValueError:
                    raise Fail(f"audit log {p}: not a JSON line: {line[:300]!r}")
    return events


def secrets_leaked(secrets, files):
    """[(secret's label, file)] for each secret found in one of the files."""
    return [(label, str(f)) for label, secret in secrets.items() for f in files if secret in read_text(f)]


def remark_of(r):
    return r.get("remark") or r.get("error") or ""


@scenario("acl-admin5", modes=("ours",))
def s_acl_admin5(ctx):
    """Access control, admin requests: our server with profile "secure" and an ACL file holding a
    4.x admin account, a 4.x normal account and an ACL 2.0 Super user; a 5.5.0 broker registers
    (broker class open). A raw unsigned PUT_KV_CONFIG gets 16 "no signature"; one signed in
    Python (HmacSHA1) with the admin key succeeds, with the normal account 16 "admin account".
    The 5.5.0 tools (DefaultMQAdminExt with AclClientRPCHook(SessionCredentials)) with the admin
    credentials: KV put/get/delete, wipe/add write permission (counts, perm 4 then 6),
    deleteTopicInNameServer, updateNameServerConfig, getNameServerConfig all succeed; with a
    wrong secret, an unknown access key, the normal account and no RPC hook every admin request
    gets 16 with "bad signature" / "unknown access key" / "admin account" / "no signature" and
    changes nothing; the Super user succeeds; reads stay open without credentials. The audit
    log names the admin key, the broker and SUCCESS for the wipe, NO_PERMISSION for every refused
    write; no secret is in the audit log or our server's log."""
    admin_ak, admin_sk = "interopAdmin", acl_secret("adminSk")
    normal_ak, normal_sk = "interopNormal", acl_secret("normalSk")
    super_user, super_pw = "interopSuper", acl_secret("superPw")
    wrong_sk = acl_secret("wrongSk")
    secrets = {"admin secret": admin_sk, "normal secret": normal_sk, "Super password": super_pw,
               "wrong secret": wrong_sk}
    cfg = ctx.dir / "access"
    cfg.mkdir(parents=True, exist_ok=True)
    acl = cfg / "plain_acl.yml"
    write_acl_file(acl, accounts=[(admin_ak, admin_sk, True), (normal_ak, normal_sk, False)],
                   users=[(super_user, super_pw, "Super")])
    audit = cfg / "audit.log"
    # many failed attempts on purpose: the per-source limit (default 10 a minute) must not
    # turn "bad signature" into "too many failed attempts"
    http_addr = f"127.0.0.1:{free_port()}"
    ns = start_ours_access(ctx, "namesrv", access_toml(profile="secure", acl_file=acl, audit_log=audit,
                                                       max_failures=100000),
                           log_level="debug", extra_args=["--http-listen", http_addr])
    addr = ns.addr
    bname = "broker-acl"
    broker = ctx.start_broker("5", addr, bname, cluster="AclCluster")
    ctx.wait_registered(addr, broker)  # cluster info: a read, open without credentials
    t1, t2, t3 = ctx.uniq("acl"), ctx.uniq("acl"), ctx.uniq("acl")
    for t in (t1, t2, t3):
        ctx.peer("5", "Producer", ["--namesrv", addr, "--topic", t, "--count", 1])

    # raw requests (no Java): unsigned refused, signed in Python accepted (admin) or refused
    # (normal account)
    kv = {"namespace": "interop_acl", "key": "raw", "value": "raw-v"}
    r = raw_request(addr, 100, kv)
    check(r.get("code") == 16 and (r.get("remark") or "").startswith("[access] no signature"),
          f"raw unsigned PUT_KV_CONFIG: {r}", ctx.logs)
    r = raw_request(addr, 100, kv, access_key=normal_ak, secret=normal_sk)
    check(r.get("code") == 16 and "admin account" in (r.get("remark") or ""),
          f"raw PUT_KV_CONFIG signed by the normal account: {r}", ctx.logs)
    r = raw_request(addr, 100, kv, access_key=admin_ak, secret=admin_sk)
    check(r.get("code") == 0, f"raw PUT_KV_CONFIG signed (Python HmacSHA1) by the admin account: {r}", ctx.logs)

    def want_ok(check_fn=None):
        def verdict(r):
            if not r["ok"]:
                return "failed"
            return check_fn(r) if check_fn else None
        return verdict

    def want_refused(text):
        def verdict(r):
            if r["ok"]:
                return "succeeded, expected code 16"
            if r.get("code") != 16 or text not in remark_of(r) or not remark_of(r).startswith("[access]"):
                return f"expected code 16 with a remark '[access] ...{text}...'"
            return None
        return verdict

    perm = lambda p: want_ok(lambda r: None if r["queues"][0]["perm"] == p else f"perm != {p}")
    code = lambda c: lambda r: None if not r["ok"] and r.get("code") == c else f"expected code {c}"
    wipe_count = lambda r: None if r["count"] >= 3 else "count < 3"
    harmless = "updateNamesrvConfig enableTopicList=true"

    steps = [
        (f"credentials {admin_ak} {admin_sk}", want_ok()),
        ("kvGet interop_acl raw", want_ok(lambda r: None if r["value"] == "raw-v" else "expected raw-v")),
        ("kvPut interop_acl k1 v1", want_ok()),
        ("kvPut interop_acl k2 v2", want_ok()),
        ("kvGet interop_acl k1", want_ok(lambda r: None if r["value"] == "v1" else "expected v1")),
        ("kvDelete interop_acl k1", want_ok()),
        ("kvGet interop_acl k1", code(22)),
        (f"wipeWritePerm {addr} {bname}", want_ok(wipe_count)),
        (f"topicRoute {t1}", perm(4)),
        (f"addWritePerm {addr} {bname}", want_ok(wipe_count)),
        (f"topicRoute {t1}", perm(6)),
        (f"deleteTopic {t2}", want_ok()),
        (f"topicRoute {t2}", code(17)),
        (harmless, want_ok()),
        ("getNamesrvConfig", want_ok(lambda r: None if r["configs"].get(addr, {}).get("enableTopicList") == "true"
                                     else "no enableTopicList=true of this server")),
    ]
    refused_writes = 0
    for creds, text in ((f"{admin_ak} {wrong_sk}", "bad signature"), (f"noSuchKey {wrong_sk}", "unknown access key"),
                        (f"{normal_ak} {normal_sk}", "admin account"), ("-", "no signature")):
        writes = ["kvPut interop_acl k2 changed", "kvDelete interop_acl k2", f"wipeWritePerm {addr} {bname}",
                  f"addWritePerm {addr} {bname}", f"deleteTopic {t3}", harmless]
        refused_writes += len(writes)
        steps += [(f"credentials {creds}", want_ok())]
        steps += [(op, want_refused(text)) for op in writes + ["getNamesrvConfig"]]
        # nothing changed
        steps += [("kvGet interop_acl k2", want_ok(lambda r: None if r["value"] == "v2" else "k2 changed")),
                  (f"topicRoute {t3}", perm(6))]
    steps += [
        # reads stay open without credentials (the last credentials: none)
        ("clusterList", want_ok(lambda r: None if r["brokers"].get(bname, {}).get("addrs") == {"0": broker.addr}
                                else "broker not listed")),
        (f"topicRoute {t1}", perm(6)),
        ("topicList", want_ok(lambda r: None if t3 in r["topics"] and t2 not in r["topics"] else "wrong topics")),
        # the ACL 2.0 Super user is an admin
        (f"credentials {super_user} {super_pw}", want_ok()),
        ("kvPut interop_acl k3 v3", want_ok()),
        ("kvGet interop_acl k3", want_ok(lambda r: None if r["value"] == "v3" else "expected v3")),
        ("kvDelete interop_acl k2", want_ok()),
        (f"wipeWritePerm {addr} {bname}", want_ok(wipe_count)),
        (f"topicRoute {t3}", perm(4)),
        (f"addWritePerm {addr} {bname}", want_ok(wipe_count)),
        (f"deleteTopic {t3}", want_ok()),
        (f"topicRoute {t3}", code(17)),
        (harmless, want_ok()),
        ("getNamesrvConfig", want_ok(lambda r: None if addr in r["configs"] else "no config of this server")),
        ("credentials -", want_ok()),
        ("kvGet interop_acl k2", code(22)),
    ]
    results = ctx.admin(addr, *[op for op, _ in steps])
    problems = []
    for (op, verdict), r in zip(steps, results):
        try:
            why = verdict(r)
        except (KeyError, IndexError, TypeError) as e:
            why = f"unexpected shape ({e!r})"
        if why:
            problems.append(f"{op.split(' ')[0] if op.startswith('credentials') else op}: {why}: {compact(r)}")
    check(not problems, f"{len(problems)} admin check(s) failed: " + " | ".join(problems)[:6000],
          results[0]["_logs"] + ctx.logs)

    # the audit log: written by a background thread, so wait for the last line we caused
    def audited():
        events = audit_events(audit)
        deletes = [e for e in events if e.get("code") == 216 and e.get("result") == "SUCCESS"
                   and (e.get("target") or {}).get("topic") == t3]
        return events if deletes else None

    events = wait_until("the Super user's DELETE_TOPIC_IN_NAMESRV in the audit log", 10, 0.2, audited)
    audit_logs = [("audit log", audit)] + ctx.logs

    def of(code_, result, by=None, **target):
        return [e for e in events if e.get("code") == code_ and e.get("result") == result
                and (by is None or e.get("access_key") == by)
                and all((e.get("target") or {}).get(k) == v for k, v in target.items())]

    check(of(205, "SUCCESS", admin_ak, broker=bname), f"no audit line: WIPE_WRITE_PERM_OF_BROKER by {admin_ak} of "
          f"{bname}, SUCCESS", audit_logs)
    check(of(205, "SUCCESS", super_user, broker=bname), f"no audit line: WIPE_WRITE_PERM_OF_BROKER by {super_user}, "
          "SUCCESS", audit_logs)
    check(len(of(205, "NO_PERMISSION", broker=bname)) == 4, "expected 4 refused WIPE_WRITE_PERM_OF_BROKER audit lines, "
          f"got {len(of(205, 'NO_PERMISSION', broker=bname))}", audit_logs)
    check(of(100, "SUCCESS", admin_ak, namespace="interop_acl", key="raw"), "no audit line of the raw signed "
          "PUT_KV_CONFIG", audit_logs)
    check(of(318, "SUCCESS", admin_ak), "no audit line of UPDATE_NAMESRV_CONFIG by the admin", audit_logs)
    check(of(103, "SUCCESS", broker=bname), "no audit line of the broker's REGISTER_BROKER", audit_logs)
    refused = [e for e in events if e.get("result") == "NO_PERMISSION"]
    # the Java writes refused (4 credential sets x 6) plus the 2 raw ones
    check(len(refused) == refused_writes + 2 and all(e.get("response_code") == 16 for e in refused),
          f"{len(refused)} NO_PERMISSION audit lines, expected {refused_writes + 2}", audit_logs)
    check(not [e for e in refused if e.get("access_key") in (admin_ak, super_user)],
          "a refused request's audit line names a verified admin key", audit_logs)
    check(not of(102, "SUCCESS", normal_ak) and not of(100, "SUCCESS", normal_ak),
          "the normal account has a successful KV write in the audit log", audit_logs)
    files = [audit, ns.stderr, ns.stdout] + sorted(audit.parent.glob("audit.log.*"))
    leaks = secrets_leaked(secrets, files)
    check(not leaks, f"secrets found: {leaks}", audit_logs)
    # every refusal counted by class and reason (each set of credentials: 6 writes and 1 read;
    # the raw requests: unsigned and the normal account's); the log shows them rate-limited
    writes = refused_writes // 4
    want = {("admin_write", "bad_signature"): writes, ("admin_write", "unknown_access_key"): writes,
            ("admin_write", "not_admin"): writes + 1, ("admin_write", "no_signature"): writes + 1,
            ("admin_read", "bad_signature"): 1, ("admin_read", "unknown_access_key"): 1,
            ("admin_read", "not_admin"): 1, ("admin_read", "no_signature"): 1}
    got = {}

    def counted():
        got.clear()
        got.update(access_refusals(http_addr))
        return got == want

    try:
        wait_until("the refusals on /metrics", 10, 0.5, counted)
    except Fail as e:
        raise Fail(f"{e}: rmq_namesrv_access_refusals_total {sorted(got.items())}, want {sorted(want.items())}",
                   ctx.logs)
    logged = set(re.findall(r"(admin_\w+) request \S+ refused: (\w+) limit=access", ours_log(ns)))
    check(logged and logged <= set(want), f"our server's log: refusals {sorted(logged)}", ctx.logs)
    by_result = {}
    for e in events:
        by_result[e.get("result")] = by_result.get(e.get("result"), 0) + 1
    print(f"# {ctx.name}: {len(steps)} admin operations (5.5.0 tools, AclClientRPCHook) as expected; audit log "
          f"{len(events)} lines {json.dumps(by_result, sort_keys=True)}; no secret in the audit log or server log",
          flush=True)


def broker_signing(access_key, secret):
    """broker.conf keys of a 5.5.0 broker that signs its requests to the NameServers:
    BrokerOuterAPI adds an AclClientRPCHook when AuthConfig.innerClientAuthenticationCredentials
    holds an access key and secret. 5.5.0 also stores that user in the broker's own user
    metadata at start-up (AuthenticationMetadataManagerImpl.initUser), which fails ("The
    authenticationMetadataProvider is not configured") without a metadata provider; the broker's
    own authentication stays off (authenticationEnabled=false), so its clients need none."""
    return {"innerClientAuthenticationCredentials": json.dumps({"accessKey": access_key, "secretKey": secret},
                                                               separators=(",", ":")),
            "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider."
                                              "LocalAuthenticationMetadataProvider"}


def register_failures(broker, namesrv):
    """The broker's log lines (with the exception line after) of failed registrations to
    `namesrv` (BrokerOuterAPI: "Failed to register current broker to name server.
    TargetHost=<addr>", then the MQBrokerException "CODE: 16 DESC: [access] ...")."""
    lines = java_logs_text(broker.home).splitlines()
    out = []
    for i, line in enumerate(lines):
        if f"Failed to register current broker to name server. TargetHost={namesrv}" in line:
            out.append(" ".join(lines[i:i + 2]))
    return out


@scenario("acl-broker-network5", modes=("ours",))
def s_acl_broker_network5(ctx):
    """Access control, broker registrations (class broker): three servers of ours, A with
    [access.broker] policy "networks" 127.0.0.1/32, B with 10.255.0.0/16 (the brokers connect
    from 127.0.0.1, outside it) and C with policy "signed" (an ACL file with a normal account).
    5.5.0 broker 1 (no credentials) registers with A;B;C: it is in A's cluster info and a
    producer sends N through A; B and C refuse it (not in their cluster info; their logs show
    address_not_allowed / no_signature; the broker's log shows the failed registrations with
    "address not allowed" / "no signature") and it keeps running. 5.5.0 broker 2 with
    innerClientAuthenticationCredentials (AuthConfig; BrokerOuterAPI then signs every request to
    the NameServers with AclClientRPCHook) registers with C (C's audit log: REGISTER_BROKER with
    its access key, SUCCESS) but not with B: the network check comes first."""
    broker_ak, broker_sk = "interopBroker", acl_secret("brokerSk")
    cfg = ctx.dir / "access"
    cfg.mkdir(parents=True, exist_ok=True)
    acl = cfg / "plain_acl.yml"
    write_acl_file(acl, accounts=[(broker_ak, broker_sk, False)])
    audit = cfg / "audit-c.log"
    a = start_ours_access(ctx, "namesrv-a", access_toml(classes={"broker": ("networks", ["127.0.0.1/32"])}))
    b = start_ours_access(ctx, "namesrv-b", access_toml(classes={"broker": ("networks", ["10.255.0.0/16"])}))
    c = start_ours_access(ctx, "namesrv-c", access_toml(acl_file=acl, audit_log=audit, max_failures=100000,
                                                        classes={"broker": ("signed", [])}))
    b1 = ctx.start_broker("5", f"{a.addr};{b.addr};{c.addr}", "broker-net")
    b2 = ctx.start_broker("5", f"{c.addr};{b.addr}", "broker-signed", extra=broker_signing(broker_ak, broker_sk))
    ctx.wait_registered(a.addr, b1, timeout=60)
    ctx.wait_registered(c.addr, b2, timeout=70)
    # the refused registrations, as the brokers logged them: code 16 with the reason. A 5.x
    # broker's client connects to its NameServers at start and sends its first registration
    # about 10 s later on that connection; our server closes a connection that sent nothing
    # within tls.handshake_timeout (10 s), so that first registration sometimes fails with a
    # transport error (RemotingSendRequestException) instead, and the next round (30 s on)
    # gets the answer. Those are tolerated here and counted in the output.
    expected = {"b1-b": (b1, b, "address not allowed"), "b1-c": (b1, c, "no signature"),
                "b2-b": (b2, b, "address not allowed")}
    seen = {}

    def refused_logged():
        for key, (broker, ns, text) in expected.items():
            seen[key] = register_failures(broker, ns.addr)
        return all(any("CODE: 16" in x and f"[access] {expected[k][2]}" in x for x in v) for k, v in seen.items())

    try:
        wait_until("the brokers' logs to show the refused registrations", 45, 0.5, refused_logged)
    except Fail as e:
        raise Fail(f"{e}; found {json.dumps({k: v[:2] for k, v in seen.items()})[:3000]}", ctx.logs)
    transport = 0
    for key, (broker, ns, text) in expected.items():
        other = [x for x in seen[key] if not ("CODE: 16" in x and f"[access] {text}" in x)]
        check(all("RemotingSendRequestException" in x or "RemotingConnectException" in x for x in other),
              f"broker log ({key}): failed registrations other than code 16 '{text}': {other[:2]}", ctx.logs)
        transport += len(other)
    (ci_b, ci_c) = ctx.admin(b.addr, "clusterList")[0], ctx.admin(c.addr, "clusterList")[0]
    check(ci_b["ok"] and not ci_b["brokers"], f"cluster info of B (networks 10.255.0.0/16): {compact(ci_b)}",
          ci_b["_logs"] + ctx.logs)
    check(ci_c["ok"] and set(ci_c["brokers"]) == {"broker-signed"},
          f"cluster info of C (signed): expected broker-signed only: {compact(ci_c)}", ci_c["_logs"] + ctx.logs)
    (ci_a,) = ctx.admin(a.addr, "clusterList")
    check(ci_a["ok"] and set(ci_a["brokers"]) == {"broker-net"}, f"cluster info of A: {compact(ci_a)}", ci_a["_logs"])
    for ns, reason in ((b, "address_not_allowed"), (c, "no_signature")):
        check(f"broker request REGISTER_BROKER(103) refused: {reason}" in ours_log(ns),
              f"{ns.label}'s log shows no REGISTER_BROKER refused: {reason}", ctx.logs)
    check("refused" not in ours_log(a), "namesrv-a refused something", ctx.logs)
    # the broker refused by B and C keeps running and serves through A
    n = ctx.count
    topic = ctx.uniq("aclnet")
    r = ctx.peer("5", "Producer", ["--namesrv", a.addr, "--topic", topic, "--count", n, "--prefix", "p"])
    check(r["succeeded"] == n and r["brokers"] == ["broker-net"], f"producer through A: {compact(r)}", r["_logs"])
    check(b1.alive() and b2.alive(), "a broker exited", ctx.logs)
    events = wait_until("broker-signed's registration in C's audit log", 10, 0.2,
                        lambda: [e for e in audit_events(audit) if e.get("code") == 103 and
                                 (e.get("target") or {}).get("broker") == "broker-signed"
                                 and e.get("result") == "SUCCESS"] and audit_events(audit))
    mine = [e for e in events if e.get("code") == 103 and (e.get("target") or {}).get("broker") == "broker-signed"]
    check(all(e.get("access_key") == broker_ak for e in mine if e.get("result") == "SUCCESS"),
          f"C's audit log: broker-signed's registrations without access_key {broker_ak}: {mine[:2]}",
          [("audit log", audit)])
    theirs = [e for e in events if (e.get("target") or {}).get("broker") == "broker-net"]
    check(theirs and all(e.get("result") == "NO_PERMISSION" for e in theirs),
          f"C's audit log: broker-net's registrations not all NO_PERMISSION: {theirs[:2]}", [("audit log", audit)])
    leaks = secrets_leaked({"broker secret": broker_sk}, [audit] + [ns.stderr for ns in (a, b, c)])
    check(not leaks, f"secrets found: {leaks}", ctx.logs)
    print(f"# {ctx.name}: broker-net in A only (B: {len(seen['b1-b'])}, C: {len(seen['b1-c'])} failed registrations "
          f"in its log); broker-signed (innerClientAuthenticationCredentials) in C only (B refused it "
          f"{len(seen['b2-b'])} time(s)); producer sent {n} through A; {transport} registration(s) failed "
          f"with a transport error (a connection idle past tls.handshake_timeout closed by our server)", flush=True)
    return a, b, c  # the three servers, for fleet.py's fleetCheck of this state


@scenario("acl-go-client5", modes=("ours",))
def s_acl_go_client5(ctx):
    """Access control, reads signed by the Go client: our server with [access.read] policy
    "signed" (an ACL file with two normal accounts); a 5.5.0 broker registers, signing with
    innerClientAuthenticationCredentials (its GET_BROKER_CLUSTER_INFO every 5 s is a read too);
    cluster info asked by the 5.5.0 tools with --ak/--sk. rocketmq-client-go with
    WithCredentials (the namesrv client's ACLInterceptor signs GET_ROUTEINFO_BY_TOPIC): a missing
    topic is topic-not-exist, the producer sends N, the route lists the broker, a push consumer
    receives the N; without credentials the route query gets 16 "no signature", with a wrong
    secret 16 "bad signature"; /metrics counts exactly those two refusals."""
    ak, sk = "interopReader", acl_secret("readerSk")
    broker_ak, broker_sk = "interopBroker", acl_secret("brokerSk")
    cfg = ctx.dir / "access"
    cfg.mkdir(parents=True, exist_ok=True)
    acl = cfg / "plain_acl.yml"
    write_acl_file(acl, accounts=[(ak, sk, False), (broker_ak, broker_sk, False)])
    http_addr = f"127.0.0.1:{free_port()}"
    ns = start_ours_access(ctx, "namesrv", access_toml(acl_file=acl, max_failures=100000,
                                                       classes={"read": ("signed", [])}),
                           extra_args=["--http-listen", http_addr])
    broker = ctx.start_broker("5", ns.addr, "broker-goacl", extra=broker_signing(broker_ak, broker_sk))
    ctx.peer("5", "Admin", ["--namesrv", ns.addr, "--ak", ak, "--sk", sk, "clusterWait", broker.broker_name, "0", 60],
             timeout=120)
    creds = ["--ak", ak, "--sk", sk]
    n = ctx.count
    r = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", ctx.uniq("missing"), "--expect", "absent",
                                        *creds], peer_timeout=15)
    check(r["result"] == "TOPIC_NOT_EXIST", f"signed go route of a missing topic: {compact(r)}", r["_logs"])
    r = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", broker.broker_name], peer_timeout=15,
                        expect_ok=False)
    check(not r["ok"] and "CODE: 16" in r.get("error", "") and "[access] no signature" in r.get("error", ""),
          f"unsigned go route: expected code 16 'no signature', got {compact(r)}", r["_logs"])
    r = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", broker.broker_name, "--ak", ak,
                                        "--sk", acl_secret("wrongSk")], peer_timeout=15, expect_ok=False)
    check(not r["ok"] and "CODE: 16" in r.get("error", "") and "[access] bad signature" in r.get("error", ""),
          f"go route with a wrong secret: expected code 16 'bad signature', got {compact(r)}", r["_logs"])
    topic = ctx.uniq("goacl")
    r = ctx.native_peer("go", "produce", ["--namesrv", ns.addr, "--topic", topic, "--count", n, "--prefix", "g",
                                          *creds])
    check(r["sent"] == n and {q.rsplit(":", 1)[0] for q in r["queues"]} == {broker.broker_name},
          f"signed go produce: {compact(r)}", r["_logs"])

    def routed():
        x = ctx.native_peer("go", "route", ["--namesrv", ns.addr, "--topic", topic, *creds], peer_timeout=15,
                            expect_ok=False)
        routed.last = x
        return x if x.get("ok") and x.get("brokers") == [broker.broker_name] else None

    routed.last = {}
    try:
        r = wait_until(f"signed go route of {topic} listing {broker.broker_name}", 30, 1, routed)
    except Fail as e:
        raise Fail(f"{e}; last: {compact(routed.last)}", routed.last.get("_logs", []) + ctx.logs)
    check(r["clusters"] == ["InteropCluster"] and r["write_queues"], f"go route of {topic}: {compact(r)}", r["_logs"])
    ctx.native_peer("go", "consume", ["--namesrv", ns.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                      "--count", n, "--prefix", "g", *creds])
    want = {("read", "no_signature"): 1, ("read", "bad_signature"): 1}
    got = access_refusals(http_addr)
    check(got == want, f"rmq_namesrv_access_refusals_total {sorted(got.items())}, want {sorted(want.items())}",
          ctx.logs)
    log = ours_log(ns)
    for reason in ("no_signature", "bad_signature"):
        check(f"read request GET_ROUTEINFO_BY_TOPIC(105) refused: {reason}" in log,
              f"our log shows no route lookup refused: {reason}", ctx.logs)
    leaks = secrets_leaked({"reader secret": sk, "broker secret": broker_sk}, [ns.stderr])
    check(not leaks, f"secrets in our server's log: {leaks}", ctx.logs)


@scenario("diff-java5", modes=("ours",))
def s_diff_java5(ctx):
    """The official Java NameServer 5.x and ours side by side: interop/diff.py sends both the same
    requests (JSON and ROCKETMQ headers) and compares the answers; PASS when every difference is
    in its allow list of deliberate ones."""
    if not ISOLATED:
        # The official Java NameServer 5.x dials its host's address by itself: never outside.
        raise Fail("needs a loopback-only network namespace (unshare --net), which is not available here")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    sys.dont_write_bytecode = True  # no interop/__pycache__
    import diff

    java = ctx._start_java_namesrv("namesrv-java", "5")
    ours = ctx._start_ours("namesrv-ours")
    lines = []

    def out(text):
        lines.append(text)
        for line in text.splitlines():
            print(f"# {ctx.name}: {line}", flush=True)

    passed = diff.run_diff(java.addr, ours.addr, verbose=os.environ.get("INTEROP_DIFF_VERBOSE") == "1", out=out)
    check(java.alive() and ours.alive(), "a NameServer exited during the differential test", ctx.logs)
    failing = [line for line in lines if line.startswith(("DIFF ", "PROTOCOL "))]
    check(passed, f"{len(failing)} difference(s) not in the allow list (DIFF/PROTOCOL lines above)", ctx.logs)


@scenario("diff-controller5", modes=("ours",))
def s_diff_controller5(ctx):
    """The controller codes side by side: the official Java NameServer 5.5.0 with its embedded
    controller (DLedger, one replica) and ours with the same controller properties (other ports);
    interop/diff_controller.py sends both controllers the same requests (JSON and ROCKETMQ
    headers) and compares the answers; PASS when every difference is in its allow list."""
    if not ISOLATED:
        # The official Java NameServer 5.x dials its host's address by itself: never outside.
        raise Fail("needs a loopback-only network namespace (unshare --net), which is not available here")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    sys.dont_write_bytecode = True  # no interop/__pycache__
    import diff_controller

    def props(label):
        # as controller-failover5's single node; both servers get mappedFileSize (ours ignores it)
        return {**controller_props(ctx, label, {"n0": f"127.0.0.1:{free_port()}"}, "n0"),
                "mappedFileSize": 16 * 1024 * 1024}

    java_props, ours_props = props("namesrv-java"), props("namesrv-ours")
    java = ctx._start_java_namesrv("namesrv-java", "5", props=java_props)
    ctx.logs.append(("namesrv-java controller.log", java.home / "logs" / "rocketmqlogs" / "controller.log"))
    config = ctx.dir / "namesrv-ours-config" / "namesrv.properties"
    config.parent.mkdir(parents=True, exist_ok=True)
    write_properties(config, ours_props)
    ours = ctx._start_ours("namesrv-ours", config=config)
    for proc, p in ((java, java_props), (ours, ours_props)):
        proc.ctl_addr = controller_self_addr(p)
        wait_until(f"{proc.label}'s controller to accept on {proc.ctl_addr}", 60, 0.3,
                   lambda: proc.alive() and port_open(proc.ctl_addr) or ctx._dead(proc))
    lines = []

    def out(text):
        lines.append(text)
        for line in text.splitlines():
            print(f"# {ctx.name}: {line}", flush=True)

    try:
        passed = diff_controller.run_diff(java.ctl_addr, ours.ctl_addr, java.addr, ours.addr,
                                          verbose=os.environ.get("INTEROP_DIFF_VERBOSE") == "1", out=out)
    except TimeoutError as e:
        raise Fail(str(e), ctx.logs)
    check(java.alive() and ours.alive(), "a NameServer exited during the differential test", ctx.logs)
    failing = [line for line in lines if line.startswith(("DIFF ", "PROTOCOL "))]
    check(passed, f"{len(failing)} difference(s) not in the allow list (DIFF/PROTOCOL lines above)", ctx.logs)


# ---------------------------------------------------------------------------------------------
# the RIP-44 controller (docs/controller.md): NameServers with the embedded controller, 5.x
# brokers in controller mode, automatic master failover

CTL_BROKER = "broker-ctl"


def controller_props(ctx, label, nodes, self_id, etcd=None, prefix=None):
    """The embedded controller's keys of a NameServer's properties file, as Java's quick-start
    namesrv.conf has them. nodes: {node id: "127.0.0.1:port"} (controllerDLegerPeers, where each
    node's controller listens); etcd (ours only): a start_etcd() result, shared by the nodes under
    `prefix`."""
    props = {
        "enableControllerInNamesrv": "true",
        "controllerDLegerGroup": "group1",
        "controllerDLegerPeers": ";".join(f"{node}-{addr}" for node, addr in nodes.items()),
        "controllerDLegerSelfId": self_id,
        "controllerStorePath": ctx.dir / f"{label}-controller-store",
    }
    if etcd is not None:
        props.update({"controllerEtcdEndpoints": etcd.endpoints, "controllerEtcdPrefix": prefix,
                      "controllerEtcdLeaseTtl": "3s"})
    return props


def controller_self_addr(props):
    self_id = props["controllerDLegerSelfId"]
    for entry in props["controllerDLegerPeers"].split(";"):
        node, _, addr = entry.partition("-")
        if node == self_id:
            return addr
    raise Fail(f"controllerDLegerSelfId {self_id} is not in controllerDLegerPeers {props['controllerDLegerPeers']}")


def start_etcd(ctx, label="etcd"):
    """A single-member etcd on 127.0.0.1 (two free ports, a fresh data dir in the scenario's
    directory), killed by PID with the scenario's other processes. Returns its Proc with
    `endpoints` ("127.0.0.1:<client port>") once /health answers true."""
    binary = shutil.which("etcd") or ("/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None)
    if not binary:
        raise Fail("etcd is not installed (the scenario starts its own /usr/bin/etcd): "
                   "apt-get install -y etcd-server")
    home = ctx.home(label)
    client, peer = free_port(), free_port()
    name = ctx.uniq("interop")
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    argv = [binary, "--name", name, "--data-dir", str(home / "data"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"{name}={peer_url}", "--initial-cluster-state", "new",
            "--initial-cluster-token", name, "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home)
    proc.endpoints = f"127.0.0.1:{client}"
    ctx.logs.append((f"{label} stderr", proc.stderr))

    def healthy():
        if not proc.alive():
            raise Fail(f"etcd exited with {proc.popen.returncode} during start-up", ctx.logs)
        try:
            status, _, body = http_get(proc.endpoints, "/health", timeout=2)
        except OSError:
            return False
        return status == 200 and '"true"' in body

    wait_until(f"etcd on {proc.endpoints} to report healthy", 30, 0.3, healthy)
    return proc


def start_ctl_broker(ctx, namesrv, ctl, label):
    """A 5.x broker of CTL_BROKER in controller mode: its id and role come from the controller
    (brokerId=-1, brokerRole=SLAVE as in Java's quick-start broker-n0.conf)."""
    return ctx.start_broker("5", namesrv, CTL_BROKER, broker_id=-1, role="SLAVE", label=label, extra={
        "enableControllerMode": "true",
        "controllerAddr": ctl,
        "allAckInSyncStateSet": "true",
    })


def remoting_call(addr, code, ext=None, body=b"", timeout=5):
    """One request with a JSON header; returns (reply header, reply body)."""
    ext = {k: str(v) for k, v in (ext or {}).items()}
    header = json.dumps({"code": code, "flag": 0, "language": "JAVA", "opaque": 21, "extFields": ext,
                         "serializeTypeCurrentRPC": "JSON", "version": 479}).encode()
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                raise OSError(f"request {code} to {addr}: closed without a reply")
            head += chunk
        size = struct.unpack(">I", head)[0]
        frame = b""
        while len(frame) < size:
            chunk = s.recv(min(65536, size - len(frame)))
            if not chunk:
                raise OSError(f"request {code} to {addr}: closed in the middle of a reply")
            frame += chunk
    header_len = struct.unpack(">I", frame[:4])[0] & 0xFFFFFF
    return json.loads(frame[4:4 + header_len]), frame[4 + header_len:]


def fastjson_loads(body):
    """A JSON body as fastjson writes it (bare numeric map keys), decoded by diff.py's parser."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    sys.dont_write_bytecode = True  # no interop/__pycache__
    import diff
    return diff.parse_json_body(body)


def ns_broker_addrs(ns_addr, broker_name):
    """{id: address} of broker_name in the NameServer's cluster info (GET_BROKER_CLUSTER_INFO,
    106, asked raw), {} when it is not there; None when the NameServer does not answer."""
    try:
        reply, body = remoting_call(ns_addr, 106)
    except OSError:
        return None
    if reply.get("code") != 0 or not body:
        return None
    table = fastjson_loads(body).get("brokerAddrTable") or {}
    return {str(k): v for k, v in ((table.get(broker_name) or {}).get("brokerAddrs") or {}).items()}


def ns_route_addrs(ns_addr, topic, broker_name):
    """{id: address} of broker_name in the route of topic (GET_ROUTEINFO_BY_TOPIC, 105, raw);
    {} when the topic has no route (17) or the broker is not in it; None when there is no answer."""
    try:
        reply, body = remoting_call(ns_addr, 105, {"topic": topic})
    except OSError:
        return None
    if reply.get("code") != 0 or not body:
        return {}
    for bd in fastjson_loads(body).get("brokerDatas") or []:
        if bd.get("brokerName") == broker_name:
            return {str(k): v for k, v in (bd.get("brokerAddrs") or {}).items()}
    return {}


def wait_ctl_pair(ctx, ns_addr, brokers, timeout=90):
    """Waits until the NameServer's cluster info lists both brokers of CTL_BROKER, one as id 0;
    returns (master, slave, {id: address})."""
    want = {b.addr for b in brokers}
    last = {}

    def paired():
        addrs = ns_broker_addrs(ns_addr, CTL_BROKER) or {}
        last["addrs"] = addrs
        return set(addrs.values()) == want and "0" in addrs and len(addrs) == 2 and addrs

    try:
        addrs = wait_until(f"both brokers of {CTL_BROKER} in cluster info of {ns_addr}, one as id 0", timeout, 0.5,
                           paired)
    except Fail as e:
        raise Fail(f"{e}; last: {last.get('addrs')}", ctx.logs)
    master = next(b for b in brokers if b.addr == addrs["0"])
    slave = next(b for b in brokers if b is not master)
    return master, slave, addrs


def admin_ok(ctx, namesrv, *ops, timeout=150):
    """ctx.admin, failing on the first operation that did not succeed."""
    results = ctx.admin(namesrv, *ops, timeout=timeout)
    for op, r in zip(ops, results):
        check(r.get("ok"), f"Admin {op}: {compact(r)}", r["_logs"] + ctx.logs)
    return results


def start_sender(ctx, namesrv, topic, prefix, max_s=240):
    """The long-running 5.x Sender peer (stopped by stop_sender)."""
    label = "sender5"
    home = ctx.home(label)
    argv = [java_bin(), *PEER_JVM, f"-Duser.home={home}", "-cp", client_classpath("5"), "rmqinterop.Sender",
            "--namesrv", namesrv, "--topic", topic, "--prefix", prefix, "--interval-ms", "50", "--max-s", str(max_s)]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home, stdin=subprocess.PIPE)
    proc.prefix = prefix
    ctx.logs.append((f"{label} stdout", proc.stdout))
    ctx.logs.append((f"{label} stderr", proc.stderr))
    return proc


SEND_LINE = re.compile(r"^SEND (\d+) (OK|FAIL) (\d+) ?(.*)$")


def sender_events(proc):
    """The Sender's attempts so far: [(key index, ok, epoch seconds, rest of the line)]."""
    out = []
    for line in read_text(proc.stdout).splitlines():
        m = SEND_LINE.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2) == "OK", int(m.group(3)) / 1000.0, m.group(4)))
    return out


def stop_sender(ctx, proc, timeout=30):
    """Tells the Sender to stop (a line on stdin, then end of input); returns its RESULT."""
    try:
        proc.popen.stdin.write(b"stop\n")
        proc.popen.stdin.close()
    except OSError:
        pass
    try:
        proc.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        ctx.stop(proc, signal.SIGKILL, timeout=10)
        raise Fail(f"the sender did not stop within {timeout} s", ctx.logs)
    results = [json.loads(x[len("RESULT "):]) for x in read_text(proc.stdout).splitlines() if x.startswith("RESULT ")]
    check(results and results[-1].get("ok"), f"sender: {results[-1] if results else 'no RESULT line'}", ctx.logs)
    return results[-1]


def wait_sends(ctx, proc, after, count, timeout, what):
    """Waits until the sender has `count` successful sends at or after epoch time `after`;
    returns the time of the first of them."""
    def enough():
        if not proc.alive():
            raise Fail(f"the sender exited ({proc.popen.returncode}) while waiting for {what}", ctx.logs)
        oks = [t for _, ok, t, _ in sender_events(proc) if ok and t >= after]
        return len(oks) >= count and oks[0]

    return wait_until(what, timeout, 0.25, enough)


def consume_and_compare(ctx, ns_addr, topic, sender, name):
    """Reads the whole topic with a fresh push consumer and compares it with what the sender
    logged: lost = acknowledged but never read, duplicated = stored more than once (distinct queue
    offsets), stored-unacked = read but never acknowledged. Prints them; returns the counts."""
    events = sender_events(sender)
    acked = {i: rest.split() for i, ok, _, rest in events if ok}
    keys = max((i for i, _, _, _ in events), default=-1) + 1
    dump = ctx.dir / f"{topic}.consumed.tsv"
    c = ctx.peer("5", "Consumer", ["--namesrv", ns_addr, "--topic", topic, "--group", ctx.uniq("cg"),
                                   "--count", keys, "--prefix", sender.prefix, "--timeout-s", 75, "--idle-s", 10,
                                   "--dump", dump], timeout=120, expect_ok=False)
    check(c.get("received"), f"the consumer read nothing of {topic}: {compact(c)}", c["_logs"] + ctx.logs)
    stored = {}
    for line in read_text(dump).splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].startswith(sender.prefix + "-"):
            stored.setdefault(int(parts[0].rsplit("-", 1)[1]), set()).add((parts[1], parts[2]))
    lost = sorted(i for i in acked if i not in stored)
    dups = sorted(i for i, locs in stored.items() if len(locs) > 1)
    unacked = sorted(i for i in stored if i not in acked)
    moved = sorted(i for i, rest in acked.items() if i in stored and len(rest) >= 3
                   and (rest[1], rest[2]) not in stored[i])
    print(f"# {name}: {keys} keys sent, {len(acked)} acknowledged, {sum(1 for e in events if not e[1])} failed "
          f"attempts; consumer read {c.get('received')} distinct ({c.get('deliveries')} deliveries): "
          f"lost {len(lost)} {lost[:10]}, duplicated {len(dups)} {dups[:10]}, stored but unacknowledged "
          f"{len(unacked)} {unacked[:10]}, acknowledged queue offset not where it was read {len(moved)} {moved[:10]}",
          flush=True)
    return {"keys": keys, "acked": len(acked), "lost": len(lost), "duplicated": len(dups), "unacked": len(unacked)}


def wait_route_master(ctx, ns_addr, topic, addr, since, timeout=60):
    """Polls the topic's route (raw, every 100 ms) until `addr` is its id 0; returns the seconds
    from `since` (time.monotonic())."""
    last = {}

    def promoted():
        route = ns_route_addrs(ns_addr, topic, CTL_BROKER)
        last["route"] = route
        return route is not None and route.get("0") == addr

    try:
        wait_until(f"{addr} as id 0 in the route of {topic} on {ns_addr}", timeout, 0.1, promoted)
    except Fail as e:
        raise Fail(f"{e}; last route: {last.get('route')}", ctx.logs)
    return time.monotonic() - since


@scenario("controller-failover5", modes=("ours", "java"))
def s_controller_failover5(ctx):
    """Automatic failover with the controller embedded in the NameServer (RIP-44): two 5.5.0
    brokers of one name in controller mode; one is elected master (id 0 in cluster info), the
    other is slave and joins the SyncStateSet; a sender sends continuously; SIGKILL the master:
    the slave becomes id 0 in the route within 60 s (timed) and the sender succeeds through it;
    the old master restarted rejoins as slave (id != 0) and the SyncStateSet; a consumer reads
    the topic and lost / duplicated messages are counted and printed (not failed on)."""
    ctl_addr = f"127.0.0.1:{free_port()}"
    ns = ctx.start_namesrv(controller=controller_props(ctx, "namesrv", {"n0": ctl_addr}, "n0"))
    controller_failover(ctx, ns.addr, ns.ctl_addr)


def controller_failover(ctx, ns_addr, ctl_addr):
    """controller-failover5 against the NameServer ns_addr and the controller ctl_addr (embedded
    in it or a process of its own): two brokers, the master SIGKILLed, the slave id 0 in the
    route, the sender through it, the old master back as slave. Returns the timings (s):
    failover (the slave id 0 in the route), resumed (the sender's first success), rejoined."""
    name = ctx.name
    t0 = time.monotonic()
    a = start_ctl_broker(ctx, ns_addr, ctl_addr, "broker-ctl-a")
    b = start_ctl_broker(ctx, ns_addr, ctl_addr, "broker-ctl-b")
    master, slave, addrs = wait_ctl_pair(ctx, ns_addr, [a, b])
    print(f"# {name}: cluster info {addrs} {time.monotonic() - t0:.1f} s after the first broker's start; "
          f"master {master.label}", flush=True)
    meta, before = admin_ok(ctx, ns_addr, f"controllerMeta {ctl_addr}",
                            f"syncStateWait {ctl_addr} {CTL_BROKER} {a.addr},{b.addr} 60")
    check(meta.get("isLeader") and meta.get("leaderAddress") == ctl_addr,
          f"the controller {ctl_addr} does not call itself leader: {compact(meta)}", ctx.logs)
    check(before.get("masterAddress") == master.addr,
          f"the controller's master is {before.get('masterAddress')}, cluster info's id 0 is {master.addr}: "
          f"{compact(before)}", ctx.logs)
    print(f"# {name}: controller leader {meta.get('leaderId')} {meta.get('leaderAddress')}; SyncStateSet "
          f"{before.get('inSyncAddrs')} master epoch {before.get('masterEpoch')}", flush=True)

    topic = ctx.uniq("ctl")
    sender = start_sender(ctx, ns_addr, topic, "f")
    first_ok = wait_sends(ctx, sender, 0, 1, 60, "the sender's first successful send")
    wait_sends(ctx, sender, first_ok + 3, 1, 30, "3 s of sends through the master")
    route = ns_route_addrs(ns_addr, topic, CTL_BROKER)
    check(route and route.get("0") == master.addr, f"route of {topic} before the kill: {route}", ctx.logs)

    killed_at, killed_mono = time.time(), time.monotonic()
    ctx.stop(master, signal.SIGKILL, timeout=10)
    failover = wait_route_master(ctx, ns_addr, topic, slave.addr, killed_mono, timeout=60)
    print(f"# {name}: SIGKILL of the master -> {slave.label} ({slave.addr}) is id 0 in the route after "
          f"{failover:.1f} s", flush=True)
    try:
        resumed = wait_sends(ctx, sender, killed_at, 1, 60, "a successful send after the failover")
    except Fail as e:
        raise Fail(f"the producer never succeeded after the failover: {e}", ctx.logs)
    wait_sends(ctx, sender, killed_at, 20, 30, "20 successful sends after the failover")
    print(f"# {name}: the sender's first success after the kill came {resumed - killed_at:.1f} s after it",
          flush=True)

    old = ctx.restart_broker(master)
    t1 = time.monotonic()
    last = {}

    def rejoined():
        got = ns_broker_addrs(ns_addr, CTL_BROKER) or {}
        last["addrs"] = got
        return got.get("0") == slave.addr and any(k != "0" and v == old.addr for k, v in got.items())

    try:
        wait_until(f"the old master {old.addr} back in cluster info as a slave (id != 0)", 60, 0.5, rejoined)
    except Fail as e:
        raise Fail(f"{e}; last: {last.get('addrs')}", ctx.logs)
    (after,) = admin_ok(ctx, ns_addr, f"syncStateWait {ctl_addr} {CTL_BROKER} {a.addr},{b.addr} 60")
    check(after.get("masterAddress") == slave.addr and after.get("masterEpoch", 0) > before.get("masterEpoch", 0),
          f"SyncStateSet after the failover: {compact(after)} (before: {compact(before)})", ctx.logs)
    rejoin = time.monotonic() - t1
    print(f"# {name}: the old master rejoined as slave {last['addrs']} and the SyncStateSet "
          f"{after.get('inSyncAddrs')} {rejoin:.1f} s after its restart; master epoch "
          f"{before.get('masterEpoch')} -> {after.get('masterEpoch')}", flush=True)
    wait_sends(ctx, sender, time.time(), 10, 30, "10 successful sends with the old master back")
    result = stop_sender(ctx, sender)
    print(f"# {name}: sender {compact(result)}", flush=True)
    consume_and_compare(ctx, ns_addr, topic, sender, name)
    return {"failover": failover, "resumed": resumed - killed_at, "rejoined": rejoin}


@scenario("controller-etcd-takeover5", modes=("ours",))
def s_controller_etcd_takeover5(ctx):
    """Two of our NameServers, each with an embedded controller, sharing one etcd (our own keys
    controllerEtcdEndpoints / controllerEtcdPrefix / controllerEtcdLeaseTtl): exactly one
    controller is leader; two 5.5.0 brokers (controllerAddr = both controllers) elect a master;
    SIGKILL the NameServer hosting the leader: the other controller calls itself leader within
    30 s (raw 1005, timed; then the tools' getControllerMetaData), the brokers keep their roles (same master, same master epoch), and a later failover
    (SIGKILL the master) is decided by the survivor: the slave becomes id 0 in its route and a
    producer sends N through it."""
    name = ctx.name
    # ours: two nodes sharing etcd. (Java, only to validate this scenario by hand: DLedger needs a
    # majority to survive the kill, hence three nodes and no etcd.)
    etcd = start_etcd(ctx) if ctx.mode == "ours" else None
    labels = ["namesrv-a", "namesrv-b"] + (["namesrv-c"] if ctx.mode != "ours" else [])
    nodes = {f"n{i}": f"127.0.0.1:{free_port()}" for i in range(len(labels))}
    prefix = f"/rmq/{ctx.uniq('interop')}"
    servers = [ctx.start_namesrv(label, controller=controller_props(ctx, label, nodes, node, etcd=etcd, prefix=prefix))
               for label, node in zip(labels, nodes)]
    ns_all = ";".join(s.addr for s in servers)
    ctl_all = ";".join(s.ctl_addr for s in servers)

    def leaders():
        metas = ctx.admin(ns_all, *[f"controllerMeta {s.ctl_addr}" for s in servers])
        leaders.last = metas
        named = {m.get("leaderAddress") for m in metas}
        ruling = [s for s, m in zip(servers, metas) if m.get("ok") and m.get("isLeader")]
        return all(m.get("ok") for m in metas) and len(ruling) == 1 and named == {ruling[0].ctl_addr} and ruling[0]

    leaders.last = []
    try:
        leader = wait_until("exactly one controller leader, named by both", 30, 1, leaders)
    except Fail as e:
        raise Fail(f"{e}; last: {[compact(m) for m in leaders.last]}", ctx.logs)
    survivors = [s for s in servers if s is not leader]
    print(f"# {name}: controller leader {leader.label} ({leader.ctl_addr})"
          + (f"; etcd {etcd.endpoints} prefix {prefix}" if etcd else ""), flush=True)

    a = start_ctl_broker(ctx, ns_all, ctl_all, "broker-ctl-a")
    b = start_ctl_broker(ctx, ns_all, ctl_all, "broker-ctl-b")
    master, slave, addrs = wait_ctl_pair(ctx, leader.addr, [a, b])
    for s in survivors:
        wait_ctl_pair(ctx, s.addr, [a, b], timeout=45)
    (before,) = admin_ok(ctx, ns_all, f"syncStateWait {leader.ctl_addr} {CTL_BROKER} {a.addr},{b.addr} 60")
    check(before.get("masterAddress") == master.addr, f"the controller's master: {compact(before)}", ctx.logs)
    print(f"# {name}: cluster info {addrs}, SyncStateSet {before.get('inSyncAddrs')}, master epoch "
          f"{before.get('masterEpoch')}", flush=True)

    t0 = time.monotonic()
    ctx.stop(leader, signal.SIGKILL, timeout=10)

    def new_leader():
        # CONTROLLER_GET_METADATA_INFO (1005), raw, to time the takeover; the tools confirm below
        for s in survivors:
            try:
                reply, _ = remoting_call(s.ctl_addr, 1005, timeout=2)
            except OSError:
                continue
            if reply.get("code") == 0 and str((reply.get("extFields") or {}).get("isLeader")).lower() == "true":
                return s
        return None

    survivor = wait_until("a surviving controller to call itself leader (1005 isLeader)", 30, 0.1, new_leader)
    took = time.monotonic() - t0
    (meta,) = admin_ok(ctx, survivor.addr, f"controllerMeta {survivor.ctl_addr}")
    check(meta.get("isLeader") and meta.get("leaderAddress") == survivor.ctl_addr,
          f"{survivor.ctl_addr} answers the tools: {compact(meta)}", ctx.logs)
    print(f"# {name}: SIGKILL of {leader.label} -> {survivor.label}'s controller calls itself leader after "
          f"{took:.1f} s", flush=True)
    # the brokers keep their roles: past a heartbeat timeout (10 s) and two metadata polls (5 s)
    time.sleep(max(0.0, 12 - (time.monotonic() - t0)))
    (kept,) = admin_ok(ctx, survivor.addr, f"syncStateSet {survivor.ctl_addr} {CTL_BROKER}")
    now = ns_broker_addrs(survivor.addr, CTL_BROKER)
    check(kept.get("masterAddress") == master.addr and kept.get("masterEpoch") == before.get("masterEpoch")
          and now == addrs, f"roles changed after the takeover: SyncStateSet {compact(kept)} (before "
          f"{compact(before)}), cluster info {now} (before {addrs})", ctx.logs)

    # a later failover, decided by the survivor
    topic = ctx.uniq("ctl")
    ctx.peer("5", "Producer", ["--namesrv", survivor.addr, "--topic", topic, "--count", ctx.count, "--prefix", "p"])
    t1 = time.monotonic()
    ctx.stop(master, signal.SIGKILL, timeout=10)
    failover = wait_route_master(ctx, survivor.addr, topic, slave.addr, t1, timeout=60)
    print(f"# {name}: SIGKILL of the master -> {slave.label} is id 0 in {survivor.label}'s route after "
          f"{failover:.1f} s", flush=True)
    r = ctx.peer("5", "Producer", ["--namesrv", ns_all, "--topic", topic, "--count", ctx.count, "--first", ctx.count,
                                   "--prefix", "p"])
    check(r["brokers"] == [CTL_BROKER], f"producer after the failover: {compact(r)}", r["_logs"])
    (after,) = admin_ok(ctx, survivor.addr, f"syncStateSet {survivor.ctl_addr} {CTL_BROKER}")
    check(after.get("masterAddress") == slave.addr and after.get("masterEpoch", 0) > before.get("masterEpoch", 0),
          f"the survivor's SyncStateSet after the failover: {compact(after)}", ctx.logs)
    ctx.peer("5", "Consumer", ["--namesrv", survivor.addr, "--topic", topic, "--group", ctx.uniq("cg"),
                               "--count", 2 * ctx.count, "--prefix", "p", "--timeout-s", 60])
    print(f"# {name}: {2 * ctx.count} messages produced (half after the failover) and consumed; master epoch "
          f"{before.get('masterEpoch')} -> {after.get('masterEpoch')}", flush=True)


# ---------------------------------------------------------------------------------------------
# main


# True inside the loopback-only network namespace (the runner re-executes itself there).
ISOLATED = False


# ---------------------------------------------------------------------------------------------
# the RocketMQ Proxy and the 5.x gRPC SDK (proxy.py): its scenarios join the list here

def _register_proxy_scenarios():
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    sys.dont_write_bytecode = True  # no interop/__pycache__
    import proxy
    proxy.register(sys.modules[__name__])
    import controller_admin
    controller_admin.register(sys.modules[__name__])
    # the standalone controller (controller_standalone.py), as proxy.py's
    import controller_standalone
    controller_standalone.register(sys.modules[__name__])
    import rolling
    rolling.register(sys.modules[__name__])
    import big
    big.register(sys.modules[__name__])
    # a broker of 10,000-100,000 topics (bigbroker.py; full size with --long)
    import bigbroker
    bigbroker.register(sys.modules[__name__])
    # the controller's metrics against Java's (controller_metrics.py)
    import controller_metrics
    controller_metrics.register(sys.modules[__name__])
    import fleet
    fleet.register(sys.modules[__name__])


_register_proxy_scenarios()


def enter_netns(args, argv):
    """Re-executes the runner in a new network namespace with only loopback (via unshare)."""
    unshare = shutil.which("unshare")
    usable = unshare is not None and subprocess.run(
        [unshare, "--net", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    if not usable:
        if args.netns == "on" or args.namesrv == "java":
            raise SystemExit("run.py: cannot create a network namespace (unshare --net); the Java NameServer 5.x "
                             "probes its host address, so refusing. Use --netns off to run anyway.")
        print("# no network namespace available (unshare --net failed); running in the host namespace",
              flush=True)
        return
    os.execv(unshare, [unshare, "--net", "--", sys.executable, str(Path(__file__).resolve()), *argv,
                       "--netns", "inner"])


def loopback_up():
    """Inside a fresh namespace lo is down: bring it up (ioctl, else `ip`)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, struct.pack("16sH", b"lo", 0))[:18])[1]
            fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))
    except OSError:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        with socket.create_connection(srv.getsockname(), timeout=5):
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namesrv", choices=("ours", "java", "java4"), default="ours",
                        help="NameServer under test (default: ours)")
    parser.add_argument("--binary", default=str(OUR_BINARY.relative_to(REPO)),
                        help="our server's binary for --namesrv ours, relative to the repo root or absolute "
                             "(default: target/release/rmq-namesrv)")
    parser.add_argument("names", nargs="*", help="scenario names to run (as --only; default: all)")
    parser.add_argument("--only", default="", help="comma-separated scenario names (default: all)")
    parser.add_argument("--list", action="store_true", help="list scenarios and exit")
    parser.add_argument("--count", type=int, default=20, help="messages per producer run (default 20)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir even when all pass")
    parser.add_argument("--long", action="store_true",
                        help="run the scenarios that have a long variant at their full size (the broker5-big-* "
                             "scenarios: 100,000 / 30,000 topics instead of 20,000 / 10,000) or in full "
                             "(rolling-restart5: ours without warm_restart too, for the figures)")
    parser.add_argument("--netns", choices=("auto", "on", "off", "inner"), default="auto",
                        help="run inside a private loopback-only network namespace (default: auto)")
    args = parser.parse_args()
    global LONG
    LONG = args.long
    if args.list:
        for name, _, modes in SCENARIOS:
            print(f"{name}  ({', '.join(modes)})")
        return 0
    if args.netns in ("auto", "on"):
        enter_netns(args, sys.argv[1:])
    elif args.netns == "inner":
        loopback_up()
        global ISOLATED
        ISOLATED = True

    selected = [s for s in SCENARIOS if args.namesrv in s[2]]
    if args.only or args.names:
        wanted = [w.strip() for w in ",".join([args.only, *args.names]).split(",") if w.strip()]
        unknown = [w for w in wanted if w not in {s[0] for s in SCENARIOS}]
        if unknown:
            raise SystemExit(f"unknown scenario(s): {', '.join(unknown)}")
        selected = [s for s in selected if s[0] in wanted]

    # SIGTERM to the runner: unwind like Ctrl-C so every started process is killed by PID.
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    work = Path(tempfile.mkdtemp(prefix="rmq-interop-"))
    check_disk(work)
    print(f"# namesrv={args.namesrv} rocketmq 5.x={LINES['5']} 4.x={LINES['4']} work dir {work}", flush=True)
    passed = failed = 0
    started = time.monotonic()
    try:
        for name, fn, _ in selected:
            ctx = Ctx(name, work / name, args.namesrv, args.count, REPO / args.binary)
            t0 = time.monotonic()
            try:
                fn(ctx)
                passed += 1
                print(f"PASS {name}", flush=True)
                ctx.passed = True
            except Fail as e:
                failed += 1
                print(f"FAIL {name}: {e}", flush=True)
                print_logs(e.logs or ctx.logs)
            except KeyboardInterrupt:
                print(f"FAIL {name}: interrupted", flush=True)
                raise
            except Exception as e:  # a bug in the scenario itself
                failed += 1
                print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
                print("    | " + "\n    | ".join(traceback.format_exc().splitlines()[-8:]))
                print_logs(ctx.logs)
            finally:
                ctx.cleanup()
                if getattr(ctx, "passed", False) and not args.keep:
                    shutil.rmtree(work / name, ignore_errors=True)  # brokers' stores: keep the disk free
                print(f"# {name}: {time.monotonic() - t0:.1f} s", flush=True)
    except KeyboardInterrupt:
        failed += 1
    print(f"# total {time.monotonic() - started:.1f} s", flush=True)
    if failed or args.keep:
        print(f"# logs kept in {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


# A broker refuses every write (SERVICE_NOT_AVAILABLE, "the broker's disk is full") once the
# disk of its store is used above diskSpaceWarningLevelRatio (0.90; computed as Java's
# File.getFreeSpace does, reserved blocks counted free). Scenarios would then fail far from the
# cause, so a disk that is already nearly full stops the run at once.
DISK_MAX_USED = 0.85
DISK_MIN_FREE = 4 << 30


def check_disk(path):
    st = os.statvfs(path)
    total, free, avail = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize
    used = (total - free) / total if total else 0.0
    if used > DISK_MAX_USED or avail < DISK_MIN_FREE:
        raise SystemExit(f"interop: the disk of {path} is {used:.0%} used with {avail / 2**30:.1f} GiB available; "
                         f"Java brokers refuse messages above 90% (diskSpaceWarningLevelRatio), so the run needs "
                         f"at most {DISK_MAX_USED:.0%} used and {DISK_MIN_FREE >> 30} GiB free: free some space "
                         f"(e.g. `cargo clean`) and run again")


def _on_sigterm(*_):
    raise KeyboardInterrupt


def print_logs(logs):
    seen = set()
    for label, path in logs:
        if path in seen:
            continue
        seen.add(path)
        lines = tail(path)
        if not lines:
            continue
        print(f"    --- {label} ({path}), last {len(lines)} lines")
        for text in lines:
            print(f"    | {text[:400]}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
