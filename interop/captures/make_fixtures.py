#!/usr/bin/env python3
"""Turns Java NameServer 5.5.0 answers into fixture files for `cargo test` (tests/java_fixtures.rs).

    interop/setup.sh                              # once: the Java 5.5.0 jars in interop/.cache
    python3 interop/captures/make_fixtures.py     # writes tests/fixtures/

For every state below the script starts a fresh official Java NameServer 5.5.0 (exactly as
interop/run.py starts it: run.Ctx._start_java_namesrv, 127.0.0.1, an ephemeral port), registers
the brokers with raw REGISTER_BROKER frames (the body laid out as a 5.x broker writes it, byte for
byte what tools/src/broker.rs `FakeBroker::body_json` builds), puts the KV entries, asks the
questions and writes each answer's body (or remark) unchanged to tests/fixtures/<name>. Every
request of one fixture must get the same bytes from Java, else the script fails. It also replays
the Go and C++ client request frames of interop/captures/*_requests.txt (byte for byte, decoded
from the capture text) against the single-master state and records Java's replies.

tests/fixtures/java_5_5_0_manifest.json records everything the Rust test needs to recreate a state
and check it: the registrations sent (ext fields and body), each request (code, version, ext,
body) with Java's code, remark and extFields, and how the body is compared.

The Java NameServer 5.x dials its own host address by itself, so it runs only inside a private
network namespace with nothing but loopback (the script re-executes itself under `unshare --net`,
brings lo up and checks that lo is the only interface); it refuses to run otherwise. Processes are
stopped by PID, every wait is bounded. Python standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INTEROP = HERE.parent
REPO = INTEROP.parent
DEFAULT_OUT = REPO / "tests" / "fixtures"
JAVA_VERSION = "5.5.0"

sys.dont_write_bytecode = True  # no interop/__pycache__
if str(INTEROP) not in sys.path:
    sys.path.insert(0, str(INTEROP))
import run  # noqa: E402  (interop/run.py: Java start-up, PIDs, ports, loopback_up)
import diff  # noqa: E402  (interop/diff.py: frame codec, connections, request builders)

JSON = diff.JSON
ROUTE, CLUSTER_INFO, MEMBER_GROUP = diff.ROUTE, diff.CLUSTER_INFO, diff.MEMBER_GROUP
QUERY_DATA_VERSION, REGISTER_BROKER, PUT_KV, KV_LIST = (diff.QUERY_DATA_VERSION, diff.REGISTER_BROKER,
                                                       diff.PUT_KV, diff.KV_LIST)
# Request versions (MQVersion ordinals): what the Go client sends, what the C++ wheel sends, what
# our builders (and diff.py) send for a 5.x Java client, and what a 5.5.0 Java client sends.
V_GO, V_CPP, V_479, V_513 = 317, 63, 479, 513
TIMESTAMP = 1700000000000  # FakeBroker's DataVersion timestamp


# ---------------------------------------------------------------------------------------------
# brokers: the same registrations as rmq_namesrv::tools::broker::FakeBroker


class Broker:
    """FakeBroker::new(cluster, name, id, port, topics) with queues/perm/version as given:
    address 127.0.0.1:<port>, HA 127.0.0.1:<port+1>, enableActingMaster=false, 5.x JSON body."""

    def __init__(self, cluster, name, broker_id, port, topics, queues=4, perm=6, counter=1, state_version=0):
        self.cluster, self.name, self.id = cluster, name, broker_id
        self.addr, self.ha_addr = f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"
        self.topics, self.queues, self.perm = list(topics), queues, perm
        self.version = {"counter": counter, "stateVersion": state_version, "timestamp": TIMESTAMP}

    def body(self):
        """FakeBroker::body_json: filter-server list, then the wrapper with dataVersion,
        mappingDataVersion (the same value), the topic table and the two empty static-topic maps;
        keys alphabetical, no whitespace."""
        table = {t: diff.topic_config(t, self.queues, self.perm) for t in self.topics}
        dv = diff.dumps(self.version).decode()
        return ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":' + dv
                + ',"mappingDataVersion":' + dv + ',"topicConfigTable":' + diff.dumps(table).decode()
                + ',"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}').encode()

    def ext(self, body):
        """RegisterBrokerHeader::to_ext of FakeBroker::header(body, false), in its order."""
        return {"brokerName": self.name, "brokerAddr": self.addr, "clusterName": self.cluster,
                "haServerAddr": self.ha_addr, "brokerId": str(self.id), "enableActingMaster": "false",
                "compressed": "false", "bodyCrc32": str(diff.crc32(body))}

    def identity(self):
        """The ext fields of FakeBroker::query_data_version, in its order."""
        return {"brokerName": self.name, "brokerAddr": self.addr, "clusterName": self.cluster,
                "brokerId": str(self.id)}

    def describe(self):
        return {"cluster": self.cluster, "brokerName": self.name, "brokerId": self.id, "brokerAddr": self.addr,
                "haServerAddr": self.ha_addr, "topics": self.topics, "readQueueNums": self.queues,
                "writeQueueNums": self.queues, "perm": self.perm, "dataVersion": self.version,
                "enableActingMaster": False}


def req(code, ext=None, body=None, version=V_479):
    return {"code": code, "version": version, "ext": ext, "body": body}


def route(topic, version, standard_only=None):
    ext = {"topic": topic}
    if standard_only is not None:
        ext["acceptStandardJsonOnly"] = standard_only
    return req(ROUTE, ext, version=version)


# ---------------------------------------------------------------------------------------------
# the states and the questions asked in each

# compare: "bytes" = our body must equal the fixture byte for byte; "reordered" = Java writes a
# list or map in HashMap order (by String.hashCode) where ours is sorted by name, so the same
# elements, byte for byte, in another order: the test compares the parsed JSON (lists of named
# elements as sets) and that the two bodies are permutations of the same bytes; its strict
# byte comparison is an ignored test (known difference). "remark": the fixture is the remark.

BROKER_A = Broker("DefaultCluster", "broker-a", 0, 10911, ["InteropCpp", "InteropGo"])
KV_NS = "fixture_ns"
KV_ENTRIES = [(KV_NS, "k1", "v1"), (KV_NS, "k2", 'v2 = \u00fc/"q"\\x'), (KV_NS, "k3", "broker-a:4;broker-b:4")]

# (every broker serves two topics or more: Java 5.x refuses a first registration with exactly one)
MULTI_A = Broker("DefaultCluster", "broker-a", 0, 10911, ["TopicA", "TopicAB"])
MULTI_B0 = Broker("DefaultCluster", "broker-b", 0, 10921, ["TopicAB", "TopicBC", "TopicMS"])
MULTI_B1 = Broker("DefaultCluster", "broker-b", 1, 10931, ["TopicAB", "TopicBC", "TopicMS"])
MULTI_C = Broker("ClusterB", "broker-c", 0, 10941, ["TopicBC", "TopicC"], queues=8)

HASH_ORDER_NOTE = ("Java lists the groups in HashMap order of the broker name (String.hashCode: "
                   "bucket of broker-b 8, broker-a 11 in a 16-bucket table), so broker-b comes first; "
                   "ours sorts by name")

STATES = [
    {
        "name": "single_master",
        "description": "one master: the state of the Go/C++ captures (broker-a at 127.0.0.1:10911, "
                       "cluster DefaultCluster, topics InteropCpp and InteropGo, 4 queues, perm 6) "
                       "plus three KV entries in namespace fixture_ns",
        "brokers": [BROKER_A],
        "kv": KV_ENTRIES,
        "fixtures": [
            {"file": "route_java_5_5_0_single_master_legacy.json", "compare": "bytes",
             "what": "GET_ROUTEINFO_BY_TOPIC body, legacy fastjson style (request version < V4_9_4)",
             "requests": [route("InteropGo", V_GO), route("InteropCpp", V_GO), route("InteropGo", V_CPP),
                          route("InteropGo", V_GO, "false")]},
            {"file": "route_java_5_5_0_single_master_standard.json", "compare": "bytes",
             "what": "GET_ROUTEINFO_BY_TOPIC body, standard JSON (version >= V4_9_4 or acceptStandardJsonOnly)",
             "requests": [route("InteropGo", V_479), route("InteropGo", V_513), route("InteropGo", V_GO, "true")]},
            {"file": "route_java_5_5_0_topic_not_exist_remark.txt", "compare": "remark",
             "what": "TOPIC_NOT_EXIST (17) remark for topic NoSuchTopic, no body",
             "requests": [route("NoSuchTopic", V_479), route("NoSuchTopic", V_GO)]},
            {"file": "cluster_info_java_5_5_0_single_master.json", "compare": "bytes",
             "what": "GET_BROKER_CLUSTER_INFO body",
             "requests": [req(CLUSTER_INFO), req(CLUSTER_INFO, version=V_GO)]},
            {"file": "member_group_java_5_5_0_single_master.json", "compare": "bytes",
             "what": "GET_BROKER_MEMBER_GROUP body of broker-a",
             "requests": [req(MEMBER_GROUP, {"clusterName": "DefaultCluster", "brokerName": "broker-a"})]},
            {"file": "query_data_version_java_5_5_0_single_master.json", "compare": "bytes",
             "what": "QUERY_DATA_VERSION response body (the NameServer's DataVersion of broker-a); "
                     "extFields changed=false for the registered version, true for another",
             "requests": [req(QUERY_DATA_VERSION, BROKER_A.identity(), diff.dumps(BROKER_A.version).decode()),
                          req(QUERY_DATA_VERSION, BROKER_A.identity(),
                              diff.dumps(dict(BROKER_A.version, counter=2)).decode())]},
            {"file": "kvlist_java_5_5_0_fixture_ns.json", "compare": "bytes",
             "what": "GET_KVLIST_BY_NAMESPACE body of namespace fixture_ns",
             "requests": [req(KV_LIST, {"namespace": KV_NS})]},
        ],
    },
    {
        "name": "multi_group",
        "description": "three groups: broker-a (master) and broker-b (master + slave) in DefaultCluster, "
                       "broker-c (master, 8 queues) in ClusterB",
        "brokers": [MULTI_A, MULTI_B0, MULTI_B1, MULTI_C],
        "kv": [],
        "fixtures": [
            {"file": "route_java_5_5_0_master_slave_legacy.json", "compare": "bytes",
             "what": "route of TopicMS (broker-b master + slave only), legacy style",
             "requests": [route("TopicMS", V_GO)]},
            {"file": "route_java_5_5_0_master_slave_standard.json", "compare": "bytes",
             "what": "route of TopicMS (broker-b master + slave only), standard JSON",
             "requests": [route("TopicMS", V_479), route("TopicMS", V_GO, "true")]},
            {"file": "route_java_5_5_0_two_groups_legacy.json", "compare": "bytes",
             "what": "route of TopicBC: broker-b (master + slave, DefaultCluster) and broker-c (ClusterB, "
                     "8 queues), legacy style; Java's HashMap order (broker-b bucket 8, broker-c 9) is the "
                     "name order here",
             "requests": [route("TopicBC", V_GO)]},
            {"file": "route_java_5_5_0_two_groups_standard.json", "compare": "bytes",
             "what": "route of TopicBC as above, standard JSON",
             "requests": [route("TopicBC", V_479), route("TopicBC", V_GO, "true")]},
            {"file": "route_java_5_5_0_two_groups_hash_order_legacy.json", "compare": "reordered",
             "what": "route of TopicAB: broker-a (master) and broker-b (master + slave), legacy style",
             "note": HASH_ORDER_NOTE, "requests": [route("TopicAB", V_GO)]},
            {"file": "route_java_5_5_0_two_groups_hash_order_standard.json", "compare": "reordered",
             "what": "route of TopicAB as above, standard JSON",
             "note": HASH_ORDER_NOTE, "requests": [route("TopicAB", V_479)]},
            {"file": "cluster_info_java_5_5_0_multi_group.json", "compare": "reordered",
             "what": "GET_BROKER_CLUSTER_INFO body",
             "note": "Java writes brokerAddrTable and each clusterAddrTable set in HashMap/HashSet order "
                     "(broker-b, broker-c, broker-a); ours sorts by name",
             "requests": [req(CLUSTER_INFO), req(CLUSTER_INFO, version=V_GO)]},
            {"file": "member_group_java_5_5_0_master_slave.json", "compare": "bytes",
             "what": "GET_BROKER_MEMBER_GROUP body of broker-b (master + slave)",
             "requests": [req(MEMBER_GROUP, {"clusterName": "DefaultCluster", "brokerName": "broker-b"})]},
        ],
    },
]

# Captured client request frames: (capture file, fixture file, client, request version).
CAPTURES = [
    ("go_requests.txt", "request_frames_go_client_v317.hex", "GO", V_GO),
    ("cpp_requests.txt", "request_frames_cpp_client_v63.hex", "CPP", V_CPP),
]
MANIFEST = "java_5_5_0_manifest.json"


# ---------------------------------------------------------------------------------------------
# captures


_EVENT = re.compile(r"^\[\s*[\d.]+s\] conn (\d+) (client->namesrv|namesrv->client)\s+type=(\d+)\(\w+\) "
                    r"header_len=(\d+) body_len=(\d+) header_word=0x([0-9a-f]{8})$")


def parse_capture(path):
    """Events of a capture_proxy.py log: dicts with conn, direction, header (exact bytes: the
    JSON text plus the trailing newline the C++ client counts in header_len), body_text, line."""
    lines = path.read_text(encoding="utf-8").split("\n")
    events = []
    i = 0
    while i < len(lines):
        m = _EVENT.match(lines[i])
        if not m:
            i += 1
            continue
        conn, direction, stype, hlen, blen, word = m.groups()
        stype, hlen, blen, word = int(stype), int(hlen), int(blen), int(word, 16)
        if stype != JSON or word != hlen:
            raise SystemExit(f"{path.name}:{i + 1}: only JSON headers expected")
        if not lines[i + 1].startswith("  header: "):
            raise SystemExit(f"{path.name}:{i + 2}: no header line")
        text = lines[i + 1][len("  header: "):].encode("utf-8")
        header = text
        j = i + 2
        if len(text) + 1 == hlen and j < len(lines) and lines[j] == "":
            header, j = text + b"\n", j + 1
        if len(header) != hlen:
            raise SystemExit(f"{path.name}:{i + 1}: header of {len(header)} bytes, capture says {hlen}")
        body_text = None
        if j < len(lines) and lines[j].startswith("  body: "):
            body_text = lines[j][len("  body: "):]
            if len(body_text.encode("utf-8")) != blen:
                raise SystemExit(f"{path.name}:{j + 1}: body of {len(body_text)} bytes, capture says {blen}")
            j += 1
        elif blen:
            raise SystemExit(f"{path.name}:{i + 1}: body of {blen} bytes not shown in full")
        events.append({"conn": int(conn), "direction": direction, "header": header, "hlen": hlen,
                       "body_len": blen, "body_text": body_text, "line": i + 1})
        i = j
    return events


def captured_requests(path):
    """The first client->namesrv frame of every distinct topic, as exact frame bytes."""
    seen, out = set(), []
    for e in parse_capture(path):
        if e["direction"] != "client->namesrv":
            continue
        if e["body_len"]:
            raise SystemExit(f"{path.name}:{e['line']}: request with a body")
        header = json.loads(e["header"])
        topic = header["extFields"]["topic"]
        if topic in seen:
            continue
        seen.add(topic)
        frame = struct.pack(">ii", 4 + e["hlen"], e["hlen"]) + e["header"]
        out.append({"topic": topic, "line": e["line"], "frame": frame, "opaque": header["opaque"],
                    "header_text": e["header"].decode("utf-8")})
    return out


def captured_route_bodies(path, topics):
    """Bodies of Java's SUCCESS answers to route requests for `topics`, from the capture."""
    events = parse_capture(path)
    bodies = set()
    for ask, answer in zip(events, events[1:]):
        if ask["direction"] != "client->namesrv" or answer["direction"] != "namesrv->client":
            continue
        if json.loads(ask["header"])["extFields"]["topic"] in topics and answer["body_text"]:
            bodies.add(answer["body_text"].encode("utf-8"))
    return bodies


# ---------------------------------------------------------------------------------------------
# talking to Java


class Java:
    def __init__(self, addr):
        self.addr = addr
        self.conn = diff.Conn(addr)
        self.opaque = 0

    def close(self):
        self.conn.close()

    def ask(self, r):
        """Sends request r (dict of req()) with a JSON header as a Java client writes it."""
        self.opaque += 1
        body = r["body"].encode("utf-8") if r["body"] is not None else b""
        self.conn.send(diff.encode_request(JSON, r["code"], self.opaque, r["ext"], body, r["version"]))
        return self.check_reply(self.conn.read_frame(), self.opaque)

    def ask_raw(self, frame, opaque):
        """Sends exact frame bytes on a fresh connection (as a fresh client process would)."""
        conn = diff.Conn(self.addr)
        try:
            conn.send(frame)
            return self.check_reply(conn.read_frame(), opaque)
        finally:
            conn.close()

    @staticmethod
    def check_reply(frame, opaque):
        if frame.opaque != opaque or frame.flag != diff.RPC_RESPONSE or frame.stype != JSON:
            raise SystemExit(f"unexpected reply framing: {frame.brief()}")
        return frame


def reply_summary(frame):
    return {"code": frame.code, "remark": frame.remark, "ext": frame.ext}


def build_state(java, state):
    """Registers the brokers and puts the KV entries; returns the manifest's record of it."""
    registrations = []
    for b in state["brokers"]:
        body = b.body()
        ext = b.ext(body)
        r = java.ask(req(REGISTER_BROKER, ext, body.decode("utf-8")))
        if r.code != 0:
            raise SystemExit(f"REGISTER_BROKER of {b.name}/{b.id} refused: {r.brief()}")
        registrations.append({"broker": b.describe(), "version": V_479, "ext": ext, "body": body.decode("utf-8"),
                              "java": {"code": r.code, "remark": r.remark, "ext": r.ext,
                                       "body": r.body.decode("utf-8") if r.body else None}})
    kv = []
    for ns, key, value in state["kv"]:
        r = java.ask(req(PUT_KV, {"namespace": ns, "key": key, "value": value}))
        if r.code != 0:
            raise SystemExit(f"PUT_KV_CONFIG {ns}/{key} refused: {r.brief()}")
        kv.append({"namespace": ns, "key": key, "value": value})
    return registrations, kv


def ask_fixture(java, fixture):
    """Asks every request of the fixture; all must get the same bytes. Returns (bytes, records)."""
    data, records = None, []
    for r in fixture["requests"]:
        frame = java.ask(r)
        if fixture["compare"] == "remark":
            if frame.body:
                raise SystemExit(f"{fixture['file']}: unexpected body: {frame.brief()}")
            got = (frame.remark or "").encode("utf-8")
        else:
            if frame.code != 0 or not frame.body:
                raise SystemExit(f"{fixture['file']}: no SUCCESS body: {frame.brief()}")
            got = frame.body
        if data is not None and got != data:
            raise SystemExit(f"{fixture['file']}: Java answered {r} differently:\n  {data!r}\n  {got!r}")
        data = got
        records.append(dict(r, java=reply_summary(frame)))
    return data, records


def replay_captures(java, fixtures_by_bytes):
    """Replays the captured client frames; returns the manifest records and the .hex texts."""
    records, hex_files = [], {}
    for capture, hex_name, language, version in CAPTURES:
        lines = [f"# Request frames of the {language} client, decoded from interop/captures/{capture}",
                 "# (exact bytes: 4-byte length, header-length word, JSON header; no body). One frame per",
                 "# line, hex; the comment above each names the capture line. Written by make_fixtures.py."]
        for i, c in enumerate(captured_requests(INTEROP / "captures" / capture)):
            header = json.loads(c["header_text"])
            if header["language"] != language or header["version"] != version or header["code"] != ROUTE:
                raise SystemExit(f"{capture}:{c['line']}: unexpected request {c['header_text']!r}")
            frame = java.ask_raw(c["frame"], c["opaque"])
            body_file = None
            if frame.body:
                body_file = fixtures_by_bytes.get(frame.body)
                if body_file is None:
                    raise SystemExit(f"{capture}:{c['line']}: Java's body matches no fixture: {frame.body!r}")
            lines.append(f"# {capture} line {c['line']}: topic {c['topic']}, opaque {c['opaque']}, "
                         f"header {len(c['frame']) - 8} bytes")
            lines.append(c["frame"].hex())
            records.append({"frames": hex_name, "index": i, "capture": f"interop/captures/{capture}",
                            "capture_line": c["line"], "language": language, "version": version,
                            "opaque": c["opaque"], "topic": c["topic"],
                            "java": dict(reply_summary(frame), body_fixture=body_file)})
        hex_files[hex_name] = "\n".join(lines) + "\n"
    return records, hex_files


# ---------------------------------------------------------------------------------------------
# main


def enter_netns(argv):
    unshare = shutil.which("unshare")
    usable = unshare is not None and subprocess.run(
        [unshare, "--net", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    if not usable:
        raise SystemExit("make_fixtures.py: cannot create a network namespace (unshare --net); the Java NameServer "
                         "5.x probes its host address, so it is never started outside one. Refusing.")
    os.execv(unshare, [unshare, "--net", "--", sys.executable, str(Path(__file__).resolve()), *argv,
                       "--netns", "inner"])


def check_isolated():
    names = sorted(name for _, name in socket.if_nameindex())
    if names != ["lo"]:
        raise SystemExit(f"make_fixtures.py: network interfaces {names} besides lo; refusing to start Java")


def generate(out_dir):
    if run.LINES["5"][0] != JAVA_VERSION:
        raise SystemExit(f"interop/java/versions.env pins {run.LINES['5'][0]}, the fixtures are named for "
                         f"{JAVA_VERSION}")
    work = Path(tempfile.mkdtemp(prefix="rmq-fixtures-"))
    files, manifest_states, replays, hex_files = {}, [], [], {}
    ok = False
    try:
        for state in STATES:
            ctx = run.Ctx(state["name"], work / state["name"], "java", 0)
            try:
                proc = ctx._start_java_namesrv("namesrv-java", "5")
                if not proc.addr.startswith("127.0.0.1:"):
                    raise SystemExit(f"Java NameServer at {proc.addr}: not loopback")
                print(f"# {state['name']}: Java NameServer {JAVA_VERSION} pid {proc.pid} on {proc.addr}", flush=True)
                java = Java(proc.addr)
                try:
                    registrations, kv = build_state(java, state)
                    fixtures = []
                    for f in state["fixtures"]:
                        data, records = ask_fixture(java, f)
                        files[f["file"]] = data
                        entry = {"file": f["file"], "what": f["what"], "compare": f["compare"],
                                 "requests": records}
                        if f.get("note"):
                            entry["note"] = f["note"]
                        fixtures.append(entry)
                        print(f"#   {f['file']}: {len(data)} bytes ({f['compare']})", flush=True)
                    if state["name"] == "single_master":
                        by_bytes = {files[f["file"]]: f["file"] for f in state["fixtures"]
                                    if f["compare"] != "remark"}
                        replays, hex_files = replay_captures(java, by_bytes)
                        print(f"#   replayed {len(replays)} captured client frames", flush=True)
                finally:
                    java.close()
                if not proc.alive():
                    raise SystemExit(f"the Java NameServer of {state['name']} exited early")
                ctx.stop(proc, timeout=30)
            except run.Fail as e:
                run.print_logs(e.logs or ctx.logs)
                raise SystemExit(f"{state['name']}: {e}")
            finally:
                ctx.cleanup()  # by PID, whatever is still alive
            manifest_states.append({"name": state["name"], "description": state["description"],
                                    "registrations": registrations, "kv": kv, "fixtures": fixtures})
        ok = True
    finally:
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"# work dir kept: {work}", flush=True)

    # The captures were made against the single-master state: Java must still answer the same.
    legacy = files["route_java_5_5_0_single_master_legacy.json"]
    for capture, topics in (("go_requests.txt", {"InteropGo"}), ("cpp_requests.txt", {"InteropCpp"})):
        captured = captured_route_bodies(INTEROP / "captures" / capture, topics)
        if captured != {legacy}:
            raise SystemExit(f"{capture}: captured route bodies {captured!r} differ from Java's {legacy!r}")
    remark = files["route_java_5_5_0_topic_not_exist_remark.txt"].decode("utf-8")
    if "No topic route info in name server for the topic: NoSuchTopic\n" not in remark:
        raise SystemExit(f"unexpected TOPIC_NOT_EXIST remark {remark!r}")

    manifest = {
        "generator": "interop/captures/make_fixtures.py",
        "java": f"Apache RocketMQ NameServer {JAVA_VERSION} (Maven Central org.apache.rocketmq:rocketmq-namesrv:"
                f"{JAVA_VERSION}), started by interop/run.py's Ctx._start_java_namesrv in a loopback-only "
                f"network namespace",
        "requests": "JSON header as a Java client writes it (interop/diff.py json_header: language JAVA, "
                    "serializeTypeCurrentRPC JSON, remark absent); REGISTER_BROKER and PUT_KV_CONFIG with "
                    "version 479",
        "states": manifest_states,
        "replays": replays,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in sorted(files.items()):
        (out_dir / name).write_bytes(data)
    for name, text in sorted(hex_files.items()):
        (out_dir / name).write_text(text, encoding="utf-8")
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"# wrote {len(files) + len(hex_files) + 1} files to {out_dir}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output directory (default: tests/fixtures)")
    ap.add_argument("--netns", choices=("auto", "inner"), default="auto", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.netns == "auto":
        enter_netns(sys.argv[1:])  # does not return
    run.loopback_up()
    check_isolated()
    generate(Path(args.out).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
