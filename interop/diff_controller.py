#!/usr/bin/env python3
"""Differential test of the RIP-44 controller: the same controller requests to the Java 5.5.0
NameServer's embedded controller (DLedger, one replica) and to ours.

    python3 interop/run.py --only diff-controller5       # starts both servers, then runs this
    python3 interop/diff_controller.py --java-ctl 127.0.0.1:P1 --ours-ctl 127.0.0.1:P2 \
        [--java-ns 127.0.0.1:N1 --ours-ns 127.0.0.1:N2] [--verbose]

Both servers must have been started with the same controller properties (docs/controller.md,
`enableControllerInNamesrv=true`, one node in `controllerDLegerPeers`), differing only in ports.
The sequence follows docs/controller.md, code by code (904, 1012/1013/1003, 1002, 1004, 1001,
1006, 1009/1010, 1011, missing header fields, unknown codes), with every error path it lists, once
with JSON and once with ROCKETMQ headers, each pass with its own cluster and broker-set names. The
frame codec, the lock-step runner (same fixed opaque to both, Java first) and the field-by-field
comparison are diff.py's; before comparing, each server's own addresses (controller and
NameServer `127.0.0.1:<port>`) are replaced by placeholders, so 1005's leader address and peers
and 1010's `controllerDLegerPeers` compare equal. Lists in bodies (SyncStateSets, replica lists)
are compared as sets; raw body bytes and JSON header text only informationally. GET_CONTROLLER_CONFIG
is compared as the values of the keys both report; keys only one reports are informational.

The fake brokers heartbeat (904, oneway) on the runner's one connection per server with
`heartbeatTimeoutMills` = 120 s, so they stay alive for the whole run and die with the connection
at its end; ids 3 and 5 of set A never heartbeat (the "not alive" cases). A second set B checks the
election policy (best in-sync replica by epoch, offset, priority; unclean election). Nothing here
waits on a controller's own timers (heartbeat expiry, the inactive-master sweep), so the sequence
is deterministic. The fake brokers' addresses are 127.0.0.1 ports below 100 where nothing listens
(the controllers' NOTIFY_BROKER_ROLE_CHANGED after elections goes nowhere).

A difference is allow-listed (ALLOWED_DIFFERENCES below, one documented reason each) or reported
as DIFF, which fails the run. Python standard library only; 127.0.0.1 only; every wait bounded.
"""

import argparse
import json
import re
import sys
import time

sys.dont_write_bytecode = True  # no interop/__pycache__
import diff  # noqa: E402
from diff import JSON, ROCKETMQ, STYPE_NAME, Difference, Frame  # noqa: E402

# request codes (docs/controller.md)
HEARTBEAT, ALTER_SSS, ELECT, REGISTER, REPLICA_INFO, METADATA, SYNC_STATE_DATA = 904, 1001, 1002, 1003, 1004, 1005, 1006
UPDATE_CONFIG, GET_CONFIG, CLEAN, NEXT_ID, APPLY_ID = 1009, 1010, 1011, 1012, 1013

TIMESTAMP = 1700000000000
HB_TIMEOUT_MS = 120000  # > the whole run: the fake brokers stay alive until the connection closes


# ---------------------------------------------------------------------------------------------
# per-server normalisation: each server's own addresses -> placeholders


def _address_pattern(addr):
    host, port = addr.rsplit(":", 1)
    # the address as is, and as a properties file may escape its colon; never a longer port
    return re.compile(re.escape(host) + r"(?:\\?:)" + re.escape(port) + r"(?!\d)")


class Normaliser:
    def __init__(self, addrs):
        """addrs: [(address, placeholder)] of one server."""
        self.rules = [(_address_pattern(a), p) for a, p in addrs if a]

    def text(self, s):
        if s is None:
            return None
        for pat, rep in self.rules:
            s = pat.sub(rep, s)
        return s

    def raw(self, b):
        if not b:
            return b
        return self.text(b.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def frame(self, f):
        if not isinstance(f, Frame):
            return self.text(f) if isinstance(f, str) else f
        ext = None if f.ext is None else {k: self.text(v) for k, v in f.ext.items()}
        return Frame(f.stype, f.code, f.language, f.version, f.opaque, f.flag, self.text(f.remark), ext,
                     self.raw(f.body), self.raw(f.header))


def _sets(data):
    """Lists compared as sets (every list in a controller body is one: SyncStateSets, replica
    lists built from hash maps)."""
    if isinstance(data, dict):
        return {k: _sets(v) for k, v in data.items()}
    if isinstance(data, list):
        items = [_sets(v) for v in data]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return data


# Keys of GET_CONTROLLER_CONFIG whose values depend on how each server was started (paths).
CONFIG_ENV_KEYS = {"controllerStorePath", "configStorePath", "rocketmqHome", "kvConfigPath", "listenPort"}


class CtlRunner(diff.Runner):
    """diff.Runner with per-server address normalisation, set-like body lists and the controller
    configuration comparison."""

    def __init__(self, java_addr, ours_addr, normalisers, verbose=False, out=print):
        super().__init__(java_addr, ours_addr, False, out)  # replies are shown normalised, in report()
        self.show = verbose
        self.norm = normalisers  # {"java": Normaliser, "ours": Normaliser}
        self.transcript = []     # (stype, step, java brief, ours brief): every compared exchange

    def compare(self, step, j, o, kind, raw_bytes):
        j, o = self.norm["java"].frame(j), self.norm["ours"].frame(o)
        self.transcript.append((self.stype, step, j.brief() if isinstance(j, Frame) else j,
                                o.brief() if isinstance(o, Frame) else o))
        if kind == "ctl" and isinstance(j, Frame) and isinstance(o, Frame):
            # compare the bodies as data with set-like lists; raw bytes informational
            jb, ob = diff.normalize_body("json", j.body), diff.normalize_body("json", o.body)
            jd, od = (_sets(jb), _sets(ob))
            before = len(self.diffs)
            super().compare(step, _with_body(j, jd), _with_body(o, od), "json", False)
            body_differs = any(d.field == "body" for d in self.diffs[before:])
            if not body_differs and j.body != o.body:
                self.info.append(Difference(
                    step, self.stype, "bytes", j.body.decode("utf-8", "replace"), o.body.decode("utf-8", "replace"),
                    "same bytes in another order" if diff.byte_multiset_equal(j.body, o.body)
                    else "decoded equal, bytes differ (field order, list order or number format)"))
            return
        super().compare(step, j, o, kind, raw_bytes)

    def _compare_props(self, step, jbody, obody):
        jp, op = diff.parse_properties(jbody or b""), diff.parse_properties(obody or b"")
        only_j, only_o = sorted(set(jp) - set(op)), sorted(set(op) - set(jp))
        if only_j or only_o:
            self.info.append(Difference(step, self.stype, "config-keys",
                                        {"only in java": only_j}, {"only in ours": only_o},
                                        "informational: only the keys both report are compared"))
        for k in sorted(set(jp) & set(op)):
            if k not in CONFIG_ENV_KEYS and jp[k] != op[k]:
                self.diffs.append(Difference(step, self.stype, f"config value {k}", jp[k], op[k]))


def _with_body(f, data):
    """The frame with its body replaced by a canonical encoding of data (for the comparison)."""
    body = b"" if data is None else json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return Frame(f.stype, f.code, f.language, f.version, f.opaque, f.flag, f.remark, f.ext, body, f.header)


# ---------------------------------------------------------------------------------------------
# the allow list


def _missing_field_remark(d, group):
    """Both SYSTEM_ERROR for a request without a field Java's controller needs: Java's remark is
    the exception (RemotingCommandException of a @CFNotNull field, or the NullPointerException it
    runs into) with its first stack frame, ours `the custom field <x> is null`."""
    code_diff = any(g.field == "code" for g in group)
    return (d.field == "remark" and not code_diff and d.step.startswith("missing ")
            and isinstance(d.java, str) and isinstance(d.ours, str)
            and re.match(r"[a-z]+\.[\w.$]+(Exception|Error)\b", d.java) is not None
            and re.fullmatch(r"the custom field <\w+> is null", d.ours) is not None)


def _required_field_refused(d, group):
    """A field our typed header requires (Java marks it @CFNotNull) missing or unparsable: Java's
    reflective decoder only logs "Failed field [x] decoding" and the handler goes on with the
    header's default value ("" / -1 / false), answering whatever that gives; ours answers
    SYSTEM_ERROR naming the field."""
    if not d.step.startswith(("missing ", "unparsable ")) or d.field not in ("code", "remark", "extFields"):
        return False
    code = [g for g in group if g.field == "code"]
    remark = [g for g in group if g.field == "remark"]
    return (len(code) == 1 and code[0].java != 1 and code[0].ours == 1 and len(remark) == 1
            and re.fullmatch(r"the custom field <\w+> (is null|is not a valid \w+: .*)", str(remark[0].ours))
            is not None)


def _path_key_refused(d, group):
    """1009 with a key naming a path that Java's controller black list lacks (kvConfigPath): Java
    applies it (SUCCESS), ours refuses the update like any black-listed key."""
    if not d.step.startswith("update config: kvConfigPath") or d.field not in ("code", "remark"):
        return False
    code = [g for g in group if g.field == "code"]
    remark = [g for g in group if g.field == "remark"]
    return (len(code) == 1 and code[0].java == 0 and code[0].ours == 16 and len(remark) == 1
            and remark[0].ours == "Can not update config in black list."
            and {g.field for g in group} <= {"code", "remark", "serialize"})


def _bad_body_remark(d, group):
    """Both SYSTEM_ERROR for a body that is not JSON: Java's remark is fastjson's exception, ours
    names the parse error (the same rule as diff.py's exception-remark)."""
    return d.step.startswith("bad body ") and diff._exception_remark(d, group)


# (id, predicate(difference, all differences of that request) -> bool, reason)
ALLOWED_DIFFERENCES = [
    ("mirror-serialize-type",
     lambda d, g: d.field == "serialize" and d.stype == ROCKETMQ and d.java == "JSON" and d.ours == "ROCKETMQ",
     "ours answers in the request's serialize type (server.response_serialize = \"mirror\", the default), "
     "on the controller port as on the NameServer's; Java always answers JSON "
     "(docs/protocol.md#serialize-type-of-responses)"),
    ("missing-field-remark", _missing_field_remark,
     "a required header field missing: both SYSTEM_ERROR; Java's remark is the exception it throws "
     "(toString() and first stack frame), ours `the custom field <x> is null` (docs/controller.md, "
     "\"Answers Java gives by accident\")"),
    ("required-field-refused", _required_field_refused,
     "a required header field (Java: @CFNotNull) missing or unparsable where Java's decoder only logs it and "
     "goes on with the field's default (1002: clusterName/brokerName \"\", brokerId -1, designateElect false; "
     "904: clusterName/brokerAddr null, the heartbeat recorded): ours answers SYSTEM_ERROR naming the field "
     "(README, \"Deliberate differences\": missing or unparsable required header field; "
     "docs/protocol.md#custom-headers)"),
    ("path-key-black-list", _path_key_refused,
     "UPDATE_CONTROLLER_CONFIG of kvConfigPath: Java's controller black list is configBlackList;configStorePath "
     "(+ rocketmqHome), so Java applies it; ours refuses every key naming a path/file/dir/home (README, "
     "\"Deliberate differences\": black list; no path a request chooses is ever written)"),
    ("bad-body-remark", _bad_body_remark,
     "a body that is not JSON: both SYSTEM_ERROR; Java's remark is fastjson's exception text, ours names the "
     "parse error (docs/protocol.md#custom-headers)"),
]


# ---------------------------------------------------------------------------------------------
# request builders


def hb_ext(cluster, name, addr, broker_id, max_offset=0, epoch=0, priority=None, timeout=HB_TIMEOUT_MS):
    ext = {"clusterName": cluster, "brokerAddr": addr, "brokerName": name, "epoch": str(epoch),
           "maxOffset": str(max_offset), "confirmOffset": str(max_offset), "heartbeatTimeoutMills": str(timeout)}
    if broker_id is not None:
        ext["brokerId"] = str(broker_id)
    if priority is not None:
        ext["electionPriority"] = str(priority)
    return ext


def sss_body(ids, epoch):
    return diff.dumps({"syncStateSet": sorted(ids), "syncStateSetEpoch": epoch})


def alter_ext(name, master_id, master_epoch):
    ext = {"brokerName": name, "invokeTime": str(TIMESTAMP)}
    if master_id is not None:
        ext["masterBrokerId"] = str(master_id)
    if master_epoch is not None:
        ext["masterEpoch"] = str(master_epoch)
    return ext


def elect_ext(cluster, name, broker_id, designate):
    return {"clusterName": cluster, "brokerName": name, "brokerId": str(broker_id),
            "designateElect": "true" if designate else "false", "invokeTime": str(TIMESTAMP)}


def register_ext(cluster, name, broker_id, addr):
    return {"clusterName": cluster, "brokerName": name, "brokerId": str(broker_id), "brokerAddress": addr,
            "invokeTime": str(TIMESTAMP)}


def apply_ext(cluster, name, broker_id, check_code):
    return {"clusterName": cluster, "brokerName": name, "appliedBrokerId": str(broker_id),
            "registerCheckCode": check_code}


def clean_ext(name, cluster=None, ids=None, living=None):
    ext = {"brokerName": name, "invokeTime": str(TIMESTAMP)}
    if cluster is not None:
        ext["clusterName"] = cluster
    if ids is not None:
        ext["brokerControllerIdsToClean"] = ids
    if living is not None:
        ext["isCleanLivingBroker"] = living
    return ext


def without(ext, *keys):
    return {k: v for k, v in ext.items() if k not in keys}


# ---------------------------------------------------------------------------------------------
# the sequence (docs/controller.md order)


def run_pass(r, p, port_base):
    cl = f"DiffCtlCluster_{p}"
    a, u = f"dctl-a-{p}", f"dctl-none-{p}"
    addr = lambda off: f"127.0.0.1:{port_base + off}"
    a1, a2, a2b, a3, a5 = addr(1), addr(2), addr(4), addr(3), addr(5)
    cc = lambda ad, t=TIMESTAMP: f"{ad};{t}"
    ctl = "ctl"  # body kind: JSON, lists as sets
    req = r.req

    # -- 1005 (any node)
    req("metadata", METADATA, kind=ctl)
    # -- 1012 / 1013 / 1003: ids and registration
    req("next id of an unknown set", NEXT_ID, {"clusterName": cl, "brokerName": a}, kind=ctl)
    req("apply id 2 on an unknown set", APPLY_ID, apply_ext(cl, a, 2, cc(a2)), kind=ctl)
    req("apply id 1 on an unknown set", APPLY_ID, apply_ext(cl, a, 1, cc(a1)), kind=ctl)
    req("apply id 1 again, same check code", APPLY_ID, apply_ext(cl, a, 1, cc(a1)), kind=ctl)
    req("apply id 1, another check code", APPLY_ID, apply_ext(cl, a, 1, cc(a2, TIMESTAMP + 1)), kind=ctl)
    req("next id after id 1", NEXT_ID, {"clusterName": cl, "brokerName": a}, kind=ctl)
    req("apply id 2", APPLY_ID, apply_ext(cl, a, 2, cc(a2)), kind=ctl)
    req("apply id 3", APPLY_ID, apply_ext(cl, a, 3, cc(a3)), kind=ctl)
    req("apply id 5 (4 skipped)", APPLY_ID, apply_ext(cl, a, 5, cc(a5)), kind=ctl)
    req("next id after id 5", NEXT_ID, {"clusterName": cl, "brokerName": a}, kind=ctl)
    req("apply id 1 with another cluster name, same check code", APPLY_ID, apply_ext(cl + "_x", a, 1, cc(a1)),
        kind=ctl)
    req("register: unknown set", REGISTER, register_ext(cl, u, 1, a1), kind=ctl)
    req("register: unknown id 9", REGISTER, register_ext(cl, a, 9, a1), kind=ctl)
    req("register id 1 (no master yet)", REGISTER, register_ext(cl, a, 1, a1), kind=ctl)
    req("register id 2 with a new address", REGISTER, register_ext(cl, a, 2, a2b), kind=ctl)
    req("replica info before any election", REPLICA_INFO, {"brokerName": a}, kind=ctl)
    # -- 904: ids 1 and 2 alive (3 and 5 never heartbeat)
    req("heartbeat id 1 (oneway)", HEARTBEAT, hb_ext(cl, a, a1, 1, 100), oneway=True)
    req("heartbeat id 2 (oneway)", HEARTBEAT, hb_ext(cl, a, a2b, 2, 50, priority=1), oneway=True)
    req("heartbeat without brokerId", HEARTBEAT, hb_ext(cl, a, a2b, None), kind=ctl)
    req("heartbeat id 2 as a request", HEARTBEAT, hb_ext(cl, a, a2b, 2, 60, priority=1), kind=ctl)
    req("heartbeat with brokerId not a number", HEARTBEAT, {**hb_ext(cl, a, a2b, None), "brokerId": "x"}, kind=ctl)
    # -- 1002
    req("elect: unknown set", ELECT, elect_ext(cl, u, 1, False), kind=ctl)
    req("elect: first election, id 1", ELECT, elect_ext(cl, a, 1, False), kind=ctl)
    req("elect by id 2: master still alive", ELECT, elect_ext(cl, a, 2, False), kind=ctl)
    req("elect designated id 2, not in the SyncStateSet", ELECT, elect_ext(cl, a, 2, True), kind=ctl)
    req("elect designated id 1, the master", ELECT, elect_ext(cl, a, 1, True), kind=ctl)
    req("elect by id -1 (as the controller asks)", ELECT, elect_ext(cl, a, -1, False), kind=ctl)
    # -- 1004
    req("replica info after the election", REPLICA_INFO, {"brokerName": a}, kind=ctl)
    req("replica info: unknown set", REPLICA_INFO, {"brokerName": u}, kind=ctl)
    req("register id 2 after the election", REGISTER, register_ext(cl, a, 2, a2b), kind=ctl)
    req("register id 3 (not alive) after the election", REGISTER, register_ext(cl, a, 3, a3), kind=ctl)
    # -- 1001, each check failing in the order Java checks, then success
    req("alter: unknown set", ALTER_SSS, alter_ext(u, 1, 1), sss_body([1, 2], 1), kind=ctl)
    req("alter: unchanged set", ALTER_SSS, alter_ext(a, 1, 1), sss_body([1], 1), kind=ctl)
    req("alter: not the master", ALTER_SSS, alter_ext(a, 2, 1), sss_body([1, 2], 1), kind=ctl)
    req("alter: without masterBrokerId", ALTER_SSS, alter_ext(a, None, 1), sss_body([1, 2], 1), kind=ctl)
    req("alter: stale master epoch", ALTER_SSS, alter_ext(a, 1, 7), sss_body([1, 2], 1), kind=ctl)
    req("alter: stale SyncStateSet epoch", ALTER_SSS, alter_ext(a, 1, 1), sss_body([1, 2], 7), kind=ctl)
    req("alter: unknown replica 9", ALTER_SSS, alter_ext(a, 1, 1), sss_body([1, 9], 1), kind=ctl)
    req("alter: replica 3 not alive", ALTER_SSS, alter_ext(a, 1, 1), sss_body([1, 3], 1), kind=ctl)
    req("alter: set without the master", ALTER_SSS, alter_ext(a, 1, 1), sss_body([2], 1), kind=ctl)
    req("alter: empty set", ALTER_SSS, alter_ext(a, 1, 1), sss_body([], 1), kind=ctl)
    req("alter: {1, 2}", ALTER_SSS, alter_ext(a, 1, 1), sss_body([1, 2], 1), kind=ctl)
    req("bad body alter: not JSON", ALTER_SSS, alter_ext(a, 1, 1), b"not json", kind=ctl)
    req("bad body alter: no body", ALTER_SSS, alter_ext(a, 1, 2), kind=ctl)
    req("replica info after the alter", REPLICA_INFO, {"brokerName": a}, kind=ctl)
    # -- 1002 again, now that id 2 is in sync
    req("elect designated id 3, not alive", ELECT, elect_ext(cl, a, 3, True), kind=ctl)
    req("elect designated id 2, in sync and alive", ELECT, elect_ext(cl, a, 2, True), kind=ctl)
    req("elect by id 1: the new master is alive", ELECT, elect_ext(cl, a, 1, False), kind=ctl)
    req("register id 1 after the designated election", REGISTER, register_ext(cl, a, 1, a1), kind=ctl)
    # -- 1006
    req("sync state data of the set and an unknown one", SYNC_STATE_DATA, body=diff.dumps([a, u]), kind=ctl)
    req("sync state data of an unknown set only", SYNC_STATE_DATA, body=diff.dumps([u]), kind=ctl)
    req("sync state data without body", SYNC_STATE_DATA, kind=ctl)
    req("sync state data of an empty list", SYNC_STATE_DATA, body=b"[]", kind=ctl)
    req("bad body sync state data: not JSON", SYNC_STATE_DATA, body=b"not json", kind=ctl)
    # -- 1011 (leader)
    req("clean: set with a master, no ids", CLEAN, clean_ext(a, cl), kind=ctl)
    req("clean: alive id 2", CLEAN, clean_ext(a, cl, "2"), kind=ctl)
    req("clean: alive id 1 among others", CLEAN, clean_ext(a, cl, "3;1"), kind=ctl)
    req("clean: ids not numbers", CLEAN, clean_ext(a, cl, "x"), kind=ctl)
    req("clean: unknown set", CLEAN, clean_ext(u, cl), kind=ctl)
    req("clean: unknown set with ids", CLEAN, clean_ext(u, cl, "1"), kind=ctl)
    req("clean: id 3 (not alive)", CLEAN, clean_ext(a, cl, "3"), kind=ctl)
    req("sync state data after cleaning id 3", SYNC_STATE_DATA, body=diff.dumps([a]), kind=ctl)
    req("clean: id 5 with a trailing ;", CLEAN, clean_ext(a, cl, "5;"), kind=ctl)
    req("register id 3 after its removal", REGISTER, register_ext(cl, a, 3, a3), kind=ctl)
    req("next id after cleaning ids", NEXT_ID, {"clusterName": cl, "brokerName": a}, kind=ctl)
    req("clean: alive id 1 without clusterName", CLEAN, clean_ext(a, None, "1"), kind=ctl)
    req("sync state data after cleaning id 1 without clusterName", SYNC_STATE_DATA, body=diff.dumps([a]), kind=ctl)
    req("clean: the living set (isCleanLivingBroker)", CLEAN, clean_ext(a, cl, living="true"), kind=ctl)
    req("replica info after the set's removal", REPLICA_INFO, {"brokerName": a}, kind=ctl)
    req("next id after the set's removal", NEXT_ID, {"clusterName": cl, "brokerName": a}, kind=ctl)
    req("elect after the set's removal", ELECT, elect_ext(cl, a, 2, False), kind=ctl)


def run_policy(r, p, port_base):
    """The election policy (docs/controller.md, 1002 rule 3) on a second set B: the old master's id
    is cleaned while it stays alive (1011 with ids but without clusterName: Java's liveness check
    then looks up (null, name, id), finds no heartbeat and lets it pass; with isCleanLivingBroker
    Java ignores the ids and removes the whole set). The master is kept but is no longer a member
    nor in the SyncStateSet, so a broker's election picks the best in-sync replica by heartbeat
    data: highest epoch, then highest max offset, then lowest election priority; then unclean
    election."""
    cl, b = f"DiffCtlCluster_{p}", f"dctl-b-{p}"
    addr = lambda off: f"127.0.0.1:{port_base + off}"
    req = r.req
    ctl = "ctl"
    # (epoch, max offset, priority) of ids 1..4: 4 wins the first policy election (offset, then priority)
    data = {1: (1, 300, 9), 2: (1, 100, 5), 3: (1, 200, 5), 4: (1, 200, 1)}
    for i in data:
        req(f"B: apply id {i}", APPLY_ID, apply_ext(cl, b, i, f"{addr(i)};{TIMESTAMP}"), kind=ctl)
    for i, (epoch, offset, prio) in data.items():
        req(f"B: heartbeat id {i} (oneway)", HEARTBEAT, hb_ext(cl, b, addr(i), i, offset, epoch, prio), oneway=True)
    req("B: elect id 1", ELECT, elect_ext(cl, b, 1, False), kind=ctl)
    req("B: alter to {1, 2, 3, 4}", ALTER_SSS, alter_ext(b, 1, 1), sss_body([1, 2, 3, 4], 1), kind=ctl)
    req("B: clean ids 1 with isCleanLivingBroker: the whole set goes", CLEAN, clean_ext(b, cl, "1", "true"),
        kind=ctl)
    req("B: replica info after the living clean", REPLICA_INFO, {"brokerName": b}, kind=ctl)
    for i in data:
        req(f"B: apply id {i} again", APPLY_ID, apply_ext(cl, b, i, f"{addr(i)};{TIMESTAMP}"), kind=ctl)
    req("B: elect id 1 again", ELECT, elect_ext(cl, b, 1, False), kind=ctl)
    req("B: alter to {1, 2, 3, 4} again", ALTER_SSS, alter_ext(b, 1, 1), sss_body([1, 2, 3, 4], 1), kind=ctl)
    req("B: clean the alive master's id 1 without clusterName", CLEAN, clean_ext(b, None, "1"), kind=ctl)
    req("B: replica info, master id 1 no longer a member", REPLICA_INFO, {"brokerName": b}, kind=ctl)
    req("B: sync state data, master no longer a member", SYNC_STATE_DATA, body=diff.dumps([b]), kind=ctl)
    req("B: register id 2 while the master is not a member", REGISTER, register_ext(cl, b, 2, addr(2)), kind=ctl)
    req("B: elect by id 2: best by offset, then priority", ELECT, elect_ext(cl, b, 2, False), kind=ctl)
    req("B: heartbeat id 3 with a higher epoch (oneway)", HEARTBEAT, hb_ext(cl, b, addr(3), 3, 50, 2, 5), oneway=True)
    req("B: heartbeat id 2 with a lower epoch (ignored, oneway)", HEARTBEAT, hb_ext(cl, b, addr(2), 2, 900, 0, 0),
        oneway=True)
    req("B: alter to {2, 3, 4}", ALTER_SSS, alter_ext(b, 4, 2), sss_body([2, 3, 4], 3), kind=ctl)
    req("B: clean the alive master's id 4 without clusterName", CLEAN, clean_ext(b, None, "4"), kind=ctl)
    req("B: elect by id -1: best by epoch", ELECT, elect_ext(cl, b, -1, False), kind=ctl)
    req("B: elect by id 2: the new master is alive", ELECT, elect_ext(cl, b, 2, False), kind=ctl)
    req("B: elect designated id 2, not in sync", ELECT, elect_ext(cl, b, 2, True), kind=ctl)
    req("B: update config enableElectUncleanMaster=true", UPDATE_CONFIG, body=b"enableElectUncleanMaster=true\n",
        kind=ctl)
    req("B: elect designated id 2, unclean", ELECT, elect_ext(cl, b, 2, True), kind=ctl)
    req("B: update config enableElectUncleanMaster=false", UPDATE_CONFIG, body=b"enableElectUncleanMaster=false\n",
        kind=ctl)
    req("B: sync state data after the unclean election", SYNC_STATE_DATA, body=diff.dumps([b, f"dctl-a-{p}"]),
        kind=ctl)
    req("B: clean the living set", CLEAN, clean_ext(b, cl, living="true"), kind=ctl)
    req("B: replica info after the set's removal", REPLICA_INFO, {"brokerName": b}, kind=ctl)


def run_config(r, p):
    """1010 / 1009: per node, not replicated. electMasterMaxRetryCount is changed and put back."""
    req = r.req
    req("controller config", GET_CONFIG, kind="props")
    for key in ("configStorePath", "configBlackList", "rocketmqHome"):
        req(f"update config: black-listed {key}", UPDATE_CONFIG, body=f"{key}=elsewhere\n".encode(), kind="ctl")
    req("update config: black-listed key among others", UPDATE_CONFIG,
        body=b"electMasterMaxRetryCount=9\nconfigStorePath=elsewhere\n", kind="ctl")
    req("update config: electMasterMaxRetryCount=5", UPDATE_CONFIG, body=b"electMasterMaxRetryCount=5\n",
        kind="ctl")
    req("controller config after the update", GET_CONFIG, kind="props")
    req("update config: electMasterMaxRetryCount=3 (back)", UPDATE_CONFIG, body=b"electMasterMaxRetryCount=3\n",
        kind="ctl")
    req("update config: kvConfigPath (the NameServer's black list)", UPDATE_CONFIG,
        body=f"kvConfigPath=kv-{p}/kvConfig.json\n".encode(), kind="ctl")
    req("update config: unknown key", UPDATE_CONFIG, body=f"noSuchControllerKey_{p}=1\n".encode(), kind="ctl")
    req("update config without body", UPDATE_CONFIG, kind="ctl")
    req("update config: bad unicode escape", UPDATE_CONFIG, body=b"electMasterMaxRetryCount=\\uZZZZ\n",
        kind="ctl")
    req("controller config at the end", GET_CONFIG, kind="props")


def run_missing(r, p):
    """Requests without a field the Java controller needs."""
    cl, a = f"DiffCtlCluster_{p}", f"dctl-m-{p}"
    ad = "127.0.0.1:9"
    req = r.req
    req("missing brokerName of next id", NEXT_ID, {"clusterName": cl}, kind="ctl")
    req("missing registerCheckCode of apply id", APPLY_ID, without(apply_ext(cl, a, 1, f"{ad};1"), "registerCheckCode"),
        kind="ctl")
    req("missing appliedBrokerId of apply id", APPLY_ID, without(apply_ext(cl, a, 1, f"{ad};1"), "appliedBrokerId"),
        kind="ctl")
    req("missing brokerName of apply id", APPLY_ID, without(apply_ext(cl, a, 1, f"{ad};1"), "brokerName"),
        kind="ctl")
    req("missing brokerName of register", REGISTER, without(register_ext(cl, a, 1, ad), "brokerName"), kind="ctl")
    req("missing designateElect of elect", ELECT, without(elect_ext(cl, a, 1, False), "designateElect"), kind="ctl")
    req("missing brokerId of elect", ELECT, without(elect_ext(cl, a, 1, False), "brokerId"), kind="ctl")
    req("missing clusterName of elect", ELECT, without(elect_ext(cl, a, 1, False), "clusterName"), kind="ctl")
    req("missing brokerName of elect", ELECT, without(elect_ext(cl, a, 1, False), "brokerName"), kind="ctl")
    req("unparsable brokerId of elect", ELECT, {**elect_ext(cl, a, 1, False), "brokerId": "x"}, kind="ctl")
    req("missing brokerName of replica info", REPLICA_INFO, {}, kind="ctl")
    req("missing clusterName of heartbeat", HEARTBEAT, without(hb_ext(cl, a, ad, 7), "clusterName"), kind="ctl")
    req("missing brokerName of heartbeat", HEARTBEAT, without(hb_ext(cl, a, ad, 7), "brokerName"), kind="ctl")
    req("missing brokerAddr of heartbeat", HEARTBEAT, without(hb_ext(cl, a, ad, 7), "brokerAddr"), kind="ctl")
    req("missing brokerName of alter", ALTER_SSS, without(alter_ext(a, 1, 1), "brokerName"), sss_body([1], 1),
        kind="ctl")
    req("missing brokerName of clean", CLEAN, without(clean_ext(a, cl), "brokerName"), kind="ctl")


def run_unknown(r):
    req = r.req
    req("unknown code 99999 on the controller port", 99999, kind="ctl")
    req("route request (105) on the controller port", 105, {"topic": "TBW102"}, kind="ctl")
    req("unknown code 10 oneway on the controller port", 10, oneway=True)
    req("metadata at the end", METADATA, kind="ctl")


# ---------------------------------------------------------------------------------------------
# driver


def wait_leaders(addrs, timeout=60.0, out=print):
    """Bounded: until every controller names a leader (1005) and serves leader-only codes (a 1012
    of an unknown set answers something other than CONTROLLER_NOT_LEADER). Returns seconds."""
    t0 = time.monotonic()
    pending = dict(addrs)
    last = {}
    while pending and time.monotonic() - t0 < timeout:
        for name, ad in list(pending.items()):
            conn = None
            try:
                conn = diff.Conn(ad, timeout=5)
                conn.send(diff.encode_request(JSON, METADATA, 1))
                meta = conn.read_frame(5)
                last[name] = meta.brief()
                if (meta.ext or {}).get("controllerLeaderAddress"):
                    conn.send(diff.encode_request(JSON, NEXT_ID, 2, {"clusterName": "DiffCtlProbe",
                                                                    "brokerName": "dctl-probe"}))
                    probe = conn.read_frame(5)
                    last[name] = probe.brief()
                    if probe.code != 2007:
                        del pending[name]
            except (OSError, diff.Closed, ValueError) as e:
                last[name] = f"{type(e).__name__}: {e}"
            finally:
                if conn is not None:
                    conn.close()
        if pending:
            time.sleep(0.3)
    if pending:
        raise TimeoutError(f"controllers not serving as leader within {timeout:g} s: "
                           + "; ".join(f"{n}: {last.get(n)}" for n in pending))
    return time.monotonic() - t0


def run_diff(java_ctl, ours_ctl, java_ns=None, ours_ns=None, verbose=False, out=print):
    """Runs everything; prints the report through out(); returns True for PASS."""
    norms = {"java": diff_normaliser(java_ctl, java_ns), "ours": diff_normaliser(ours_ctl, ours_ns)}
    waited = wait_leaders({"java": java_ctl, "ours": ours_ctl}, out=out)
    out(f"diff-controller: both controllers serve as leader ({waited:.1f} s)")
    t0 = time.monotonic()
    r = CtlRunner(java_ctl, ours_ctl, norms, verbose, out)
    ns = None
    try:
        for stype, tag, base, port_base in ((JSON, "j", 1000, 20), (ROCKETMQ, "r", 5000, 40)):
            r.stype, r.opaque_base, r.seq = stype, base, 0
            run_pass(r, tag, port_base)
            run_policy(r, tag, port_base + 10)
            run_config(r, tag)
            run_missing(r, tag)
            run_unknown(r)
        if java_ns and ours_ns:
            # the NameServer port itself answers controller codes REQUEST_CODE_NOT_SUPPORTED
            ns = CtlRunner(java_ns, ours_ns, norms, verbose, out)
            for stype, base in ((JSON, 8000), (ROCKETMQ, 8500)):
                ns.stype, ns.opaque_base, ns.seq = stype, base, 0
                ns.req("metadata (1005) on the NameServer port", METADATA, kind="ctl")
                ns.req("next id (1012) on the NameServer port", NEXT_ID,
                       {"clusterName": "DiffCtlCluster", "brokerName": "dctl-ns"}, kind="ctl")
            r.diffs += ns.diffs
            r.info += ns.info
            r.protocol += ns.protocol
            r.steps += ns.steps
            r.transcript += ns.transcript
    finally:
        r.close()
        if ns is not None:
            ns.close()
    elapsed = time.monotonic() - t0
    diff.classify(r.diffs, ALLOWED_DIFFERENCES)
    return report(r, elapsed, out)


def diff_normaliser(ctl, ns):
    return Normaliser([(ctl, "<controller>"), (ns, "<namesrv>")])


def report(r, elapsed, out):
    allowed = [d for d in r.diffs if d.allowed]
    failing = [d for d in r.diffs if not d.allowed]
    groups = diff._grouped(failing)
    out(f"diff-controller: {r.steps} requests per server in {elapsed:.1f} s; {len(r.diffs)} differing fields: "
        f"{len(allowed)} allow-listed, {len(failing)} not (in {len(groups)} requests); "
        f"{len(r.protocol)} protocol problems; {len(r.info)} informational")
    if r.show:
        for stype, step, jb, ob in r.transcript:
            out(f"  {STYPE_NAME.get(stype, '-'):8} {step}\n      java: {jb}\n      ours: {ob}")
    for ident, _, reason in ALLOWED_DIFFERENCES:
        mine = [d for d in allowed if d.allowed == ident]
        if not mine:
            out(f"UNUSED allow-list entry {ident} (not observed in this run): {reason}")
            continue
        out(f"ALLOWED {ident} ({len(mine)} fields): {reason}")
        if ident == "mirror-serialize-type":
            continue
        for d in mine:
            out(f"    {d.where()}: java {diff._show(d.java, 300)} / ours {diff._show(d.ours, 300)}")
    for d in r.info:
        if d.field == "body" and isinstance(d.java, dict) and isinstance(d.ours, dict):
            out(f"INFO {d.where()} ({d.note}), differing paths:")
            for path, jv, ov in diff.delta(d.java, d.ours):
                out(f"    {path}: java {diff._show(jv, 200)} / ours {diff._show(ov, 200)}")
        elif d.note == "same bytes in another order" and d.field == "header-text":
            out(f"INFO {d.where()}: same bytes in another order (ext field order)")
        elif d.field == "config-keys":
            out(f"INFO {d.where()} ({d.note})\n    only in java: {' '.join(d.java['only in java'])}"
                f"\n    only in ours: {' '.join(d.ours['only in ours'])}")
        else:
            out(f"INFO {d.text(400)}")
    for p in r.protocol:
        out(f"PROTOCOL {p}")
    for (stype, step), ds in groups.items():
        out(f"DIFF [{STYPE_NAME.get(stype, '-')}] {step}")
        for d in ds:
            note = f" ({d.note})" if d.note else ""
            if d.field == "body" and isinstance(d.java, dict) and isinstance(d.ours, dict):
                out(f"    {d.field}{note}, differing paths:")
                for path, jv, ov in diff.delta(d.java, d.ours):
                    out(f"        {path}: java {diff._show(jv, 300)} / ours {diff._show(ov, 300)}")
            else:
                out(f"    {d.field}{note}:\n        java: {diff._show(d.java)}\n        ours: {diff._show(d.ours)}")
    ok = not failing and not r.protocol
    out(f"diff-controller: {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--java-ctl", required=True, help="HOST:PORT of the Java NameServer's controller")
    ap.add_argument("--ours-ctl", required=True, help="HOST:PORT of our controller")
    ap.add_argument("--java-ns", help="HOST:PORT of the Java NameServer (optional)")
    ap.add_argument("--ours-ns", help="HOST:PORT of our NameServer (optional)")
    ap.add_argument("--verbose", action="store_true", help="print every reply")
    args = ap.parse_args()
    for a in (args.java_ctl, args.ours_ctl, args.java_ns, args.ours_ns):
        if a and not a.startswith("127.0.0.1:"):
            raise SystemExit(f"{a}: only 127.0.0.1 addresses")
    return 0 if run_diff(args.java_ctl, args.ours_ctl, args.java_ns, args.ours_ns, args.verbose) else 1


if __name__ == "__main__":
    sys.exit(main())
