"""The faults of the chaos schedule. Each is a class with `name`, `apply(env, rng)` returning a
description of what it did (which nodes), `heal(env)` and `hold(rng)` (seconds it stays in
place). `env` is the runner (net, cluster, recorder, the current leader and masters).

Holds are past the timeouts they are meant to cross: the etcd lease (3 s), the brokers'
controller heartbeat timeout (6 s), the NameServers' broker expiry (15 s)."""

import signal

from cluster import BROKER_HEARTBEAT_TIMEOUT_MS, GROUPS, LEASE_TTL_S


class LeaderCutFromEtcd:
    name = "leader-etcd-cut"
    about = "the controller leader's NameServer cut from every etcd member, both ways"

    def apply(self, env, rng):
        # Java's DLedger controller keeps its log on the controller nodes themselves: the leader
        # is cut from its peers instead.
        self.node = env.controller_leader()
        others = env.cluster.etcd or [ns for ns in env.cluster.namesrvs if ns != self.node]
        env.net.partition([self.node], others)
        return {"cut": self.node, "from": others}

    def hold(self, rng):
        return 4 * LEASE_TTL_S

    def heal(self, env):
        env.net.heal()


class MasterCutFromController:
    name = "master-ctl-cut"
    about = "a group's master cut from every NameServer (their controllers), not from its slave or clients"

    def apply(self, env, rng):
        self.group = rng.choice(GROUPS)
        self.node = env.master_node(self.group)
        env.net.partition([self.node], env.cluster.namesrvs)
        return {"group": self.group, "cut": self.node, "from": env.cluster.namesrvs}

    def hold(self, rng):
        return 3 * BROKER_HEARTBEAT_TIMEOUT_MS / 1000

    def heal(self, env):
        env.net.heal()


class NamesrvCutFromBrokers:
    name = "ns-broker-cut"
    about = "one NameServer cut from every broker, both ways"

    def apply(self, env, rng):
        self.node = rng.choice(env.cluster.namesrvs)
        env.net.partition([self.node], list(env.cluster.brokers))
        return {"cut": self.node, "from": list(env.cluster.brokers)}

    def hold(self, rng):
        return 20

    def heal(self, env):
        env.net.heal()


class LeaderCutFromBrokers:
    name = "leader-broker-cut"
    about = "the controller leader's NameServer cut from every broker, both ways (it keeps its lease)"

    def apply(self, env, rng):
        self.node = env.controller_leader()
        env.net.partition([self.node], list(env.cluster.brokers))
        return {"cut": self.node, "from": list(env.cluster.brokers), "leader": True}

    def hold(self, rng):
        return 20

    def heal(self, env):
        env.net.heal()


class EtcdKill:
    name = "etcd-kill"
    about = "one etcd member SIGKILLed, restarted on its data"

    def apply(self, env, rng):
        # Java's controller: a follower controller node (its DLedger replica) instead.
        leader = env.controller_leader()
        self.node = rng.choice(env.cluster.etcd or [ns for ns in env.cluster.namesrvs if ns != leader])
        env.cluster.kill(self.node)
        return {"killed": self.node}

    def hold(self, rng):
        return 10

    def heal(self, env):
        env.cluster.restart(self.node)


class NamesrvPause:
    name = "ns-pause"
    about = "the controller leader's NameServer SIGSTOPped past the lease, then SIGCONT"

    def apply(self, env, rng):
        self.node = env.controller_leader()
        env.cluster.signal(self.node, signal.SIGSTOP)
        return {"paused": self.node}

    def hold(self, rng):
        return 4 * LEASE_TTL_S

    def heal(self, env):
        env.cluster.signal(self.node, signal.SIGCONT)


class SlowMasterSlave:
    name = "slow-master-slave"
    about = "the link between a master and its slave loses 5 % each way (and 200 ms delay where tc netem exists)"

    def apply(self, env, rng):
        self.group = rng.choice(GROUPS)
        self.master = env.master_node(self.group)
        self.slave = next(b for b, g in env.cluster.brokers.items() if g == self.group and b != self.master)
        env.net.partition([self.master], [self.slave], probability=0.05)
        delay = env.net.netem_available()
        if delay:
            env.net.set_delay(self.slave, 200)
        return {"group": self.group, "master": self.master, "slave": self.slave, "loss": 0.05,
                "delay_ms": 200 if delay else None}

    def hold(self, rng):
        return 20

    def heal(self, env):
        env.net.heal()
        env.net.clear_delay(self.slave)


class HealDuringElection:
    name = "heal-mid-election"
    about = "a master cut from the controllers, healed around its heartbeat timeout, while the election runs"

    def apply(self, env, rng):
        self.group = rng.choice(GROUPS)
        self.node = env.master_node(self.group)
        env.net.partition([self.node], env.cluster.namesrvs)
        return {"group": self.group, "cut": self.node, "from": env.cluster.namesrvs}

    def hold(self, rng):
        return round(BROKER_HEARTBEAT_TIMEOUT_MS / 1000 + rng.uniform(-1.0, 3.0), 2)

    def heal(self, env):
        env.net.heal()


ALL = [LeaderCutFromEtcd, MasterCutFromController, NamesrvCutFromBrokers, EtcdKill, NamesrvPause,
       SlowMasterSlave, HealDuringElection, LeaderCutFromBrokers]
BY_NAME = {kind.name: kind for kind in ALL}
CI = [MasterCutFromController, LeaderCutFromEtcd, NamesrvPause, HealDuringElection]
