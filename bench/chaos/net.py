"""The chaos harness's network: one network namespace per node, all on one bridge, private
addresses that exist only inside them; faults are netfilter rules inside the nodes' namespaces.

    hub (the harness's own namespace, made by `unshare --net`): bridge chbr, 10.77.0.1/24
    node N: namespace chaos<run>-N, veth pair (hub side on the bridge), 10.77.0.<n>/24, lo up

A cut from A to B is a DROP of A's packets to B in A's OUTPUT chain and of B's packets from A in
B's INPUT chain (both, so that a one-way cut is one-way whichever side sends); both ways is the
two cuts. Loss is the same rule with `-m statistic --mode random --probability p`. Delay needs
tc's netem qdisc, which this kernel may not have: `netem_available()` says, and the slow-link
fault then uses loss only (and says so in the schedule).

Every command is `ip`/`iptables` with a timeout; `teardown()` deletes the namespaces it made
(processes inside are stopped by PID before, by the harness)."""

import subprocess
import uuid

SUBNET = "10.77.0"
HUB_ADDR = f"{SUBNET}.1"
BRIDGE = "chbr"


def sh(argv, check=True, timeout=20):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


class Net:
    """The namespaces of one run. nodes: {name: address}."""

    def __init__(self):
        self.run_id = uuid.uuid4().hex[:6]
        self.nodes = {}
        self.ns = {}
        self.rules = set()  # (src, dst, probability or None)
        self.netem = None

    def setup_hub(self):
        sh(["ip", "link", "set", "lo", "up"])
        sh(["ip", "link", "add", BRIDGE, "type", "bridge"])
        sh(["ip", "addr", "add", f"{HUB_ADDR}/24", "dev", BRIDGE])
        sh(["ip", "link", "set", BRIDGE, "up"])

    def add_node(self, name, host):
        """A namespace for node `name` with address 10.77.0.<host>; returns the address."""
        ns = f"chaos{self.run_id}-{name}"
        addr = f"{SUBNET}.{host}"
        sh(["ip", "netns", "add", ns])
        self.ns[name] = ns
        self.nodes[name] = addr
        hub_if, node_if = f"h{self.run_id}{host}", f"n{self.run_id}{host}"
        sh(["ip", "link", "add", hub_if, "type", "veth", "peer", "name", node_if])
        sh(["ip", "link", "set", node_if, "netns", ns])
        sh(["ip", "link", "set", hub_if, "master", BRIDGE])
        sh(["ip", "link", "set", hub_if, "up"])
        sh(["ip", "-n", ns, "link", "set", node_if, "name", "eth0"])
        sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
        sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        return addr

    def exec_prefix(self, name):
        """argv prefix running a command inside node `name`'s namespace (the PID is the
        command's: ip execs it)."""
        return ["ip", "netns", "exec", self.ns[name]]

    def netem_available(self):
        if self.netem is None:
            first = next(iter(self.ns.values()))
            r = sh(["ip", "netns", "exec", first, "tc", "qdisc", "add", "dev", "eth0", "root", "netem",
                    "delay", "1ms"], check=False)
            self.netem = r.returncode == 0
            if self.netem:
                sh(["ip", "netns", "exec", first, "tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        return self.netem

    def _ipt(self, node, op, chain, peer_flag, peer, probability):
        argv = self.exec_prefix(node) + ["iptables", "-w", "5", op, chain, peer_flag, self.nodes[peer]]
        if probability is not None:
            argv += ["-m", "statistic", "--mode", "random", "--probability", f"{probability:g}"]
        sh(argv + ["-j", "DROP"], check=(op == "-A"))

    def cut(self, src, dst, probability=None):
        """Drops src's packets to dst (all, or each with `probability`)."""
        key = (src, dst, probability)
        if key in self.rules:
            return
        self._ipt(src, "-A", "OUTPUT", "-d", dst, probability)
        self._ipt(dst, "-A", "INPUT", "-s", src, probability)
        self.rules.add(key)

    def uncut(self, src, dst, probability=None):
        key = (src, dst, probability)
        if key not in self.rules:
            return
        self._ipt(src, "-D", "OUTPUT", "-d", dst, probability)
        self._ipt(dst, "-D", "INPUT", "-s", src, probability)
        self.rules.discard(key)

    def partition(self, side_a, side_b, probability=None):
        """Cuts every pair across the two sides, both ways."""
        for a in side_a:
            for b in side_b:
                self.cut(a, b, probability)
                self.cut(b, a, probability)

    def heal(self):
        for src, dst, p in sorted(self.rules, key=str):
            self.uncut(src, dst, p)

    def set_delay(self, node, delay_ms):
        """netem delay on node's interface (all its traffic), when netem exists."""
        if self.netem_available():
            sh(self.exec_prefix(node) + ["tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
                                         "delay", f"{delay_ms}ms"])

    def clear_delay(self, node):
        if self.netem_available():
            sh(self.exec_prefix(node) + ["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)

    def teardown(self):
        for ns in self.ns.values():
            sh(["ip", "netns", "del", ns], check=False)
        sh(["ip", "link", "del", BRIDGE], check=False)
