"""The processes of a chaos run, each in its node's namespace (net.Net): three etcd members, our
NameServers with the embedded controller on that etcd (and the KV backend on it), two 5.5.0
broker groups in controller mode, the 5.5.0 Java sender. Every process is remembered by PID
and stopped by PID (`Cluster.stop_all`)."""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "interop"))
sys.dont_write_bytecode = True
import run as interop  # noqa: E402  (classpaths, Java, the properties writer)

NS_PORT, CTL_PORT, ETCD_CLIENT, ETCD_PEER, BROKER_PORT = 9876, 9878, 2379, 2380, 10911
BROKER_JVM = ["-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=128m", "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1"]
GROUPS = ("chaos-a", "chaos-b")
LEASE_TTL_S = 3
BROKER_HEARTBEAT_TIMEOUT_MS = 6000
PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:
    _libc = None


def _child_setup():
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def port_open(addr, timeout=1.0):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(what, timeout, check, interval=0.3):
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / interval) + 2):
        if check():
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}")


class Proc:
    def __init__(self, name, node, kind, argv, home, env):
        self.name, self.node, self.kind, self.argv, self.home, self.env = name, node, kind, argv, home, env
        self.popen = None
        self.starts = 0
        self.expected_exit = False

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    @property
    def pid(self):
        return self.popen.pid


class Cluster:
    def __init__(self, net, workdir, binary, n_namesrv=2):
        self.net, self.dir, self.binary = net, Path(workdir), Path(binary)
        self.n_namesrv = n_namesrv
        self.procs = {}
        self.etcd, self.namesrvs, self.brokers = [], [], {}
        self.crashes = []  # (time, name, exit code): a process that exited while expected to run

    # -- processes ------------------------------------------------------------------------------

    def spawn(self, proc, stdin=subprocess.DEVNULL):
        proc.home.mkdir(parents=True, exist_ok=True)
        proc.starts += 1
        suffix = "" if proc.starts == 1 else f".{proc.starts}"
        env = {k: v for k, v in os.environ.items() if k not in ("ROCKETMQ_HOME", "NAMESRV_ADDR")}
        env.update(proc.env)
        argv = self.net.exec_prefix(proc.node) + proc.argv
        (proc.home / "argv.txt").write_text(" ".join(proc.argv) + "\n")
        with open(proc.home / f"stdout{suffix}.log", "wb") as out, open(proc.home / f"stderr{suffix}.log", "wb") as err:
            proc.popen = subprocess.Popen(argv, cwd=proc.home, env=env, stdin=stdin, stdout=out, stderr=err,
                                          start_new_session=True, preexec_fn=_child_setup)
        proc.stdout = proc.home / f"stdout{suffix}.log"
        proc.expected_exit = False
        self.procs[proc.name] = proc
        return proc

    def signal(self, name, sig):
        proc = self.procs[name]
        if proc.alive():
            os.kill(proc.pid, sig)

    def kill(self, name):
        proc = self.procs[name]
        proc.expected_exit = True
        if proc.alive():
            proc.popen.kill()
            proc.popen.wait(timeout=10)

    def check_crashes(self, now):
        for proc in self.procs.values():
            if proc.popen is not None and not proc.expected_exit and proc.popen.poll() is not None:
                proc.expected_exit = True
                self.crashes.append((now, proc.name, proc.popen.returncode))

    def stop_all(self):
        for proc in reversed(list(self.procs.values())):
            proc.expected_exit = True
            if proc.alive():
                try:
                    os.kill(proc.pid, signal.SIGCONT)
                    proc.popen.kill()
                    proc.popen.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass

    # -- etcd -----------------------------------------------------------------------------------

    def start_etcd(self, hosts):
        binary = shutil.which("etcd") or "/usr/bin/etcd"
        if not os.access(binary, os.X_OK):
            raise RuntimeError("etcd is not installed: apt-get install -y etcd-server")
        members = {f"e{i}": self.net.add_node(f"e{i}", h) for i, h in enumerate(hosts)}
        cluster = ",".join(f"{m}=http://{a}:{ETCD_PEER}" for m, a in members.items())
        for m, a in members.items():
            home = self.dir / m
            argv = [binary, "--name", m, "--data-dir", str(home / "data"),
                    "--listen-client-urls", f"http://{a}:{ETCD_CLIENT}", "--advertise-client-urls",
                    f"http://{a}:{ETCD_CLIENT}", "--listen-peer-urls", f"http://{a}:{ETCD_PEER}",
                    "--initial-advertise-peer-urls", f"http://{a}:{ETCD_PEER}", "--initial-cluster", cluster,
                    "--initial-cluster-state", "new", "--initial-cluster-token", f"chaos{self.net.run_id}",
                    "--heartbeat-interval", "100", "--election-timeout", "1000",
                    "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]
            self.spawn(Proc(m, m, "etcd", argv, home, {}))
            self.etcd.append(m)
        self.etcd_endpoints = ",".join(f"{a}:{ETCD_CLIENT}" for a in members.values())
        for m, a in members.items():
            wait_for(f"etcd {m} healthy", 60, lambda a=a: _etcd_healthy(a))

    def restart(self, name):
        proc = self.procs[name]
        if proc.alive():
            raise RuntimeError(f"{name} is still running")
        self.spawn(proc)

    # -- NameServers ----------------------------------------------------------------------------

    def start_namesrvs(self, hosts):
        addrs = {f"ns{i}": self.net.add_node(f"ns{i}", h) for i, h in enumerate(hosts)}
        peers = ";".join(f"n{i}-{a}:{CTL_PORT}" for i, a in enumerate(addrs.values()))
        for i, (name, addr) in enumerate(addrs.items()):
            home = self.dir / name
            home.mkdir(parents=True, exist_ok=True)
            props = {
                "enableControllerInNamesrv": "true",
                "controllerDLegerGroup": "group1",
                "controllerDLegerPeers": peers,
                "controllerDLegerSelfId": f"n{i}",
                "controllerStorePath": home / "controller-store",
                "controllerEtcdEndpoints": self.etcd_endpoints,
                "controllerEtcdPrefix": "/chaos/controller",
                "controllerEtcdLeaseTtl": f"{LEASE_TTL_S}s",
                "scanNotActiveBrokerInterval": 2000,
                "scanInactiveMasterInterval": 2000,
                "kvBackend": "etcd",
                "kvEtcdEndpoints": self.etcd_endpoints,
                "kvEtcdPrefix": "/chaos/kv",
            }
            interop.write_properties(home / "namesrv.properties", props)
            argv = [str(self.binary), "--listen", f"{addr}:{NS_PORT}", "--config", str(home / "namesrv.properties"),
                    "--kv-config-path", str(home / "kvConfig.json"),
                    "--config-store-path", str(home / "namesrv-store.properties")]
            self.spawn(Proc(name, name, "namesrv", argv, home, {"HOME": str(home)}))
            self.namesrvs.append(name)
        for name, addr in addrs.items():
            wait_for(f"{name} on {addr}:{NS_PORT} and {CTL_PORT}", 30,
                     lambda a=addr: port_open(f"{a}:{NS_PORT}") and port_open(f"{a}:{CTL_PORT}"))
        self.ns_list = ";".join(f"{a}:{NS_PORT}" for a in addrs.values())
        self.ctl_list = ";".join(f"{a}:{CTL_PORT}" for a in addrs.values())

    def start_java_namesrvs(self, hosts):
        """Java 5.5.0 NameServers with the embedded DLedger controller (no etcd; the KV is each
        node's own file)."""
        addrs = {f"ns{i}": self.net.add_node(f"ns{i}", h) for i, h in enumerate(hosts)}
        peers = ";".join(f"n{i}-{a}:{CTL_PORT}" for i, a in enumerate(addrs.values()))
        for i, (name, addr) in enumerate(addrs.items()):
            home = self.dir / name
            home.mkdir(parents=True, exist_ok=True)
            props = {
                "listenPort": NS_PORT, "bindAddress": addr, "kvConfigPath": home / "kvConfig.json",
                "rocketmqHome": home, "enableControllerInNamesrv": "true", "controllerDLegerGroup": "group1",
                "controllerDLegerPeers": peers, "controllerDLegerSelfId": f"n{i}",
                "controllerStorePath": home / "controller-store", "mappedFileSize": 16 * 1024 * 1024,
                "scanNotActiveBrokerInterval": 2000, "scanInactiveMasterInterval": 2000,
            }
            interop.write_properties(home / "namesrv.properties", props)
            (home / "tmp").mkdir(exist_ok=True)
            argv = [interop.java_bin(), f"-Djava.io.tmpdir={home / 'tmp'}", *interop.NAMESRV_JVM,
                    f"-Duser.home={home}", "-cp", interop.server_classpath("5", "namesrv"),
                    "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(home / "namesrv.properties")]
            self.spawn(Proc(name, name, "namesrv", argv, home, {"ROCKETMQ_HOME": str(home)}))
            self.namesrvs.append(name)
        for name, addr in addrs.items():
            wait_for(f"{name} on {addr}:{NS_PORT} and {CTL_PORT}", 90,
                     lambda a=addr: port_open(f"{a}:{NS_PORT}") and port_open(f"{a}:{CTL_PORT}"), interval=1)
        self.ns_list = ";".join(f"{a}:{NS_PORT}" for a in addrs.values())
        self.ctl_list = ";".join(f"{a}:{CTL_PORT}" for a in addrs.values())

    # -- brokers --------------------------------------------------------------------------------

    def start_brokers(self, first_host):
        host = first_host
        for group in GROUPS:
            for member in ("0", "1"):
                name = f"{group}-{member}"
                addr = self.net.add_node(name, host)
                host += 1
                self.brokers[name] = group
                self.spawn(self._broker_proc(name, group, addr))
        for name in self.brokers:
            addr = self.net.nodes[name]
            wait_for(f"broker {name} on {addr}:{BROKER_PORT}", 120,
                     lambda a=addr, n=name: self._alive_or_raise(n) and port_open(f"{a}:{BROKER_PORT}"), interval=1)

    def _alive_or_raise(self, name):
        if not self.procs[name].alive():
            raise RuntimeError(f"{name} exited with {self.procs[name].popen.returncode} during start-up")
        return True

    def _broker_proc(self, name, group, addr):
        home = self.dir / name
        home.mkdir(parents=True, exist_ok=True)
        store = home / "store"
        props = {
            "brokerClusterName": "ChaosCluster", "brokerName": group, "brokerId": -1, "brokerRole": "SLAVE",
            "namesrvAddr": self.ns_list, "brokerIP1": addr, "brokerIP2": addr, "bindAddress": addr,
            "listenPort": BROKER_PORT, "haListenPort": BROKER_PORT + 1,
            "storePathRootDir": store, "storePathCommitLog": store / "commitlog",
            "mappedFileSizeCommitLog": 16 * 1024 * 1024, "mappedFileSizeConsumeQueue": 60000 * 20,
            "maxHashSlotNum": 10000, "maxIndexNum": 40000, "autoCreateTopicEnable": "true",
            "fetchNamesrvAddrByAddressServer": "false", "flushDiskType": "ASYNC_FLUSH", "rocketmqHome": home,
            "timerWheelEnable": "false", "enableSlaveActingMaster": "false",
            "enableControllerMode": "true", "controllerAddr": self.ctl_list, "allAckInSyncStateSet": "true",
            "controllerHeartBeatTimeoutMills": BROKER_HEARTBEAT_TIMEOUT_MS,
            "syncBrokerMetadataPeriod": 2000, "checkSyncStateSetPeriod": 2000, "syncControllerMetadataPeriod": 3000,
            "registerNameServerPeriod": 10000, "brokerNotActiveTimeoutMillis": 15000,
        }
        interop.write_properties(home / "broker.conf", props)
        (home / "tmp").mkdir(exist_ok=True)
        argv = [interop.java_bin(), f"-Djava.io.tmpdir={home / 'tmp'}", *BROKER_JVM, f"-Duser.home={home}",
                "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99",
                "-cp", interop.server_classpath("5", "broker"), "org.apache.rocketmq.broker.BrokerStartup",
                "-c", str(home / "broker.conf")]
        return Proc(name, name, "broker", argv, home, {"ROCKETMQ_HOME": str(home)})

    # -- clients --------------------------------------------------------------------------------

    def start_sender(self, host, topic, max_s):
        self.net.add_node("client", host)
        home = self.dir / "sender"
        argv = [interop.java_bin(), *interop.PEER_JVM, f"-Duser.home={home}", "-cp", interop.client_classpath("5"),
                "rmqinterop.Sender", "--namesrv", self.ns_list, "--topic", topic, "--prefix", "c",
                "--interval-ms", "20", "--retry-ms", "200", "--poll-ms", "1000", "--max-s", str(max_s)]
        return self.spawn(Proc("sender", "client", "client", argv, home, {}), stdin=subprocess.PIPE)

    def stop_sender(self, timeout=30):
        proc = self.procs["sender"]
        proc.expected_exit = True
        try:
            proc.popen.stdin.write(b"stop\n")
            proc.popen.stdin.close()
        except OSError:
            pass
        try:
            proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait(timeout=10)

    def consume(self, topic, count, dump):
        home = self.dir / "consumer"
        home.mkdir(parents=True, exist_ok=True)
        argv = self.net.exec_prefix("client") + [
            interop.java_bin(), *interop.PEER_JVM, f"-Duser.home={home}",
            "-Drocketmq.client.rebalance.waitInterval=1000", "-cp", interop.client_classpath("5"),
            "rmqinterop.Consumer", "--namesrv", self.ns_list, "--topic", topic, "--group", "chaos_check",
            "--count", str(count), "--prefix", "c", "--timeout-s", "90", "--idle-s", "15", "--dump", str(dump)]
        with open(home / "stdout.log", "wb") as out, open(home / "stderr.log", "wb") as err:
            popen = subprocess.Popen(argv, cwd=home, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, preexec_fn=_child_setup)
            try:
                popen.wait(timeout=150)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(timeout=10)
        return interop.read_text(home / "stdout.log")


def _etcd_healthy(addr):
    try:
        status, _, body = interop.http_get(f"{addr}:{ETCD_CLIENT}", "/health", timeout=2)
    except OSError:
        return False
    return status == 200 and '"true"' in body
