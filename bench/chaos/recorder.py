"""The history of a chaos run: threads in the harness (the hub namespace) polling, each on its own
period, and appending one JSON object per observation to history.jsonl:

    {"t": s, "k": "route", "ns": "ns0", "route": {"chaos-a": {"0": addr, "1": addr}, ...}}   100 ms
    {"t": s, "k": "route", "ns": "ns0", "err": "..."}                    (no answer in 1 s)
    {"t": s, "k": "meta", "ns": "ns0", "leader": "n1", "is_leader": false}                  250 ms
    {"t": s, "k": "sync", "ns": "ns1", "groups": {"chaos-a": {"master": addr, "epoch": e,
          "sse": e2, "in_sync": [addr..]}}}                              (asked of the leader)
    {"t": s, "k": "broker", "b": "chaos-a-0", "id": 0, "epoch": e, "max_offset": o}        250 ms
    {"t": s, "k": "kv_put", "ns": "ns0", "key": k, "value": v, "ok": true, "t0": s}       1 s
          (t0: when the put was sent; t: when it was answered or given up)
    {"t": s, "k": "kv", "ns": "ns0", "table": {k: v}}                    (after each heal)
    {"t": s, "k": "fault", "name": ..., "phase": "start"|"heal", "detail": ...}          (the runner)

t is seconds since the run's start (time.monotonic()). Every poll is bounded (1 s socket
timeout); a stopped or cut process shows as an `err` entry, never as a stall of the others."""

import json
import threading
import time

from cluster import BROKER_PORT, CTL_PORT, GROUPS, NS_PORT, interop

KV_NAMESPACE = "chaos"


def call(addr, code, ext=None, body=b"", timeout=1.0):
    return interop.remoting_call(addr, code, ext, body, timeout=timeout)


def parse(body):
    return interop.fastjson_loads(body) if body else {}


class Recorder:
    def __init__(self, path, net, cluster, topic):
        self.file = open(path, "a", buffering=1)
        self.lock = threading.Lock()
        self.net, self.cluster, self.topic = net, cluster, topic
        self.t0 = time.monotonic()
        self.stopping = threading.Event()
        self.threads = []
        self.kv_seq = 0

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def write(self, **entry):
        entry = {"t": self.now(), **entry}
        with self.lock:
            self.file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        return entry

    def start(self):
        for ns in self.cluster.namesrvs:
            self._loop(0.1, lambda ns=ns: self.poll_route(ns))
            self._loop(0.25, lambda ns=ns: self.poll_controller(ns))
        for b in self.cluster.brokers:
            self._loop(0.25, lambda b=b: self.poll_broker(b))
        if self.cluster.etcd:  # the KV is shared only through etcd (ours)
            self._loop(1.0, self.put_kv)

    def _loop(self, period, fn):
        def body():
            while not self.stopping.is_set():
                started = time.monotonic()
                try:
                    fn()
                except Exception as e:  # a poll must never end the recorder; it is recorded
                    self.write(k="poll_error", what=getattr(fn, "__name__", "?"), err=repr(e)[:200])
                self.stopping.wait(max(0.0, period - (time.monotonic() - started)))

        th = threading.Thread(target=body, daemon=True)
        th.start()
        self.threads.append(th)

    def stop(self):
        self.stopping.set()
        for th in self.threads:
            th.join(timeout=5)
        self.file.close()

    # -- the polls -----------------------------------------------------------------------------

    def poll_route(self, ns):
        addr = f"{self.net.nodes[ns]}:{NS_PORT}"
        try:
            reply, body = call(addr, 105, {"topic": self.topic})
        except OSError as e:
            self.write(k="route", ns=ns, err=str(e)[:120])
            return
        route = {}
        if reply.get("code") == 0:
            for bd in parse(body).get("brokerDatas") or []:
                route[bd.get("brokerName")] = {str(k): v for k, v in (bd.get("brokerAddrs") or {}).items()}
        self.write(k="route", ns=ns, code=reply.get("code"), route=route)

    def poll_controller(self, ns):
        addr = f"{self.net.nodes[ns]}:{CTL_PORT}"
        try:
            reply, _ = call(addr, 1005)
        except OSError as e:
            self.write(k="meta", ns=ns, err=str(e)[:120])
            return
        ext = reply.get("extFields") or {}
        is_leader = str(ext.get("isLeader")).lower() == "true"
        self.write(k="meta", ns=ns, leader=ext.get("controllerLeaderId"), is_leader=is_leader)
        if not is_leader:
            return
        try:
            reply, body = call(addr, 1006, body=json.dumps(list(GROUPS)).encode())
        except OSError as e:
            self.write(k="sync", ns=ns, err=str(e)[:120])
            return
        if reply.get("code") != 0:
            self.write(k="sync", ns=ns, code=reply.get("code"), remark=reply.get("remark"))
            return
        groups = {}
        for name, info in (parse(body).get("replicasInfoTable") or {}).items():
            groups[name] = {"master": info.get("masterAddress"), "epoch": info.get("masterEpoch"),
                            "sse": info.get("syncStateSetEpoch"),
                            "in_sync": sorted(r.get("brokerAddress") for r in info.get("inSyncReplicas") or [])}
        self.write(k="sync", ns=ns, groups=groups)

    def poll_broker(self, b):
        addr = f"{self.net.nodes[b]}:{BROKER_PORT}"
        try:
            reply, body = call(addr, 1007)
        except OSError as e:
            self.write(k="broker", b=b, err=str(e)[:120])
            return
        if reply.get("code") != 0:
            self.write(k="broker", b=b, code=reply.get("code"))
            return
        cache = parse(body)
        epochs = [e.get("epoch", 0) for e in cache.get("epochList") or []]
        self.write(k="broker", b=b, id=cache.get("brokerId"), epoch=max(epochs, default=0),
                   max_offset=cache.get("maxOffset"))

    def put_kv(self):
        ns = self.cluster.namesrvs[self.kv_seq % len(self.cluster.namesrvs)]
        self.kv_seq += 1
        key, value = f"k{self.kv_seq % 7}", f"v{self.kv_seq}"
        addr = f"{self.net.nodes[ns]}:{NS_PORT}"
        t0 = self.now()
        try:
            reply, _ = call(addr, 100, {"namespace": KV_NAMESPACE, "key": key, "value": value})
            self.write(k="kv_put", ns=ns, key=key, value=value, ok=reply.get("code") == 0,
                       code=reply.get("code"), t0=t0)
        except OSError as e:
            self.write(k="kv_put", ns=ns, key=key, value=value, ok=False, err=str(e)[:120], t0=t0)

    def kv_tables(self):
        """Every NameServer's KV namespace, now (one entry each in the history)."""
        out = {}
        if not self.cluster.etcd:
            return out
        for ns in self.cluster.namesrvs:
            addr = f"{self.net.nodes[ns]}:{NS_PORT}"
            t0 = self.now()
            try:
                reply, body = call(addr, 219, {"namespace": KV_NAMESPACE}, timeout=2)
                table = parse(body).get("table") or {} if reply.get("code") == 0 else None
                out[ns] = table
                self.write(k="kv", ns=ns, table=table, code=reply.get("code"), t0=t0)
            except OSError as e:
                out[ns] = None
                self.write(k="kv", ns=ns, err=str(e)[:120])
        return out
