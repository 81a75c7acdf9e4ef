#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into fuzz/corpus/<target>/ (or --out DIR).

The seeds come from the project's own recorded traffic and test vectors, in each target's input
format (see fuzz/README.md):
  - the golden vectors V1-V11 (protocol/src/lib.rs, body.rs V9) and the JSON texts of the
    protocol unit tests;
  - the request frames the Go and C++ clients sent (tests/fixtures/request_frames_*.hex) and the
    headers and bodies of both directions in interop/captures/*_requests.txt;
  - the Java 5.5.0 fixtures (tests/fixtures/*.json, java_5_5_0_manifest.json: registrations with
    their ext fields and bodies, KV entries, every fixture request);
  - the Java property names of src/java_keys.rs, and PROXY v1/v2 headers of every kind.

fuzz/corpus/<target>/ is the committed corpus: these seeds plus what fuzzing found and
`fuzz/run-long.sh --merge` kept. Run this again when the sources above change; files are named by
the SHA-1 of their content, as libFuzzer names corpus files, so a seed already there is rewritten
in place, never duplicated.
"""

import argparse
import hashlib
import json
import re
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Seeds:
    def __init__(self, out):
        self.out = out
        self.count = {}

    def add(self, target, data):
        if isinstance(data, str):
            data = data.encode()
        d = self.out / target
        d.mkdir(parents=True, exist_ok=True)
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
        self.count[target] = self.count.get(target, 0) + 1


# ------------------------------------------------------------------------------------------------
# Sources


def golden_vectors():
    """name -> bytes of the hex-dump constants in protocol/src/lib.rs."""
    text = (ROOT / "protocol/src/lib.rs").read_text()
    out = {}
    for name, body in re.findall(r'const (V\d+): &str = "\\\n(.*?)";', text, re.S):
        data = bytearray()
        for line in body.splitlines():
            data += bytes(int(b, 16) for b in line.split()[1:])
        out[name] = bytes(data)
    return out


def v9_zlib():
    text = (ROOT / "protocol/src/body.rs").read_text()
    m = re.search(r"let zlib: \[u8; \d+\] = \[(.*?)\];", text, re.S)
    return bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", m.group(1)))


def rust_json_literals(path):
    """The r#"{...}"# literals of a Rust file that are JSON objects."""
    text = (ROOT / path).read_text()
    return [s for s in re.findall(r'r#"(\{.*?)"#', text) if s.endswith("}")]


def fixture_frames():
    frames = []
    for path in sorted((ROOT / "tests/fixtures").glob("request_frames_*.hex")):
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                frames.append(bytes.fromhex(line.strip()))
    return frames


def capture_lines(kind):
    """The `header:` or `body:` texts of the interop captures."""
    out = []
    for path in sorted((ROOT / "interop/captures").glob("*_requests.txt")):
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith(kind + ": "):
                out.append(line[len(kind) + 2 :])
    return out


def manifest():
    return json.loads((ROOT / "tests/fixtures/java_5_5_0_manifest.json").read_text())


def manifest_requests(m):
    """(code, version, ext, body) of every request the manifest records."""
    out = []
    for state in m["states"]:
        for reg in state["registrations"]:
            out.append((103, reg["version"], reg["ext"], reg["body"]))
        for kv in state.get("kv", []):
            out.append((100, 479, {"namespace": kv["namespace"], "key": kv["key"], "value": kv["value"]}, None))
        for fixture in state["fixtures"]:
            for req in fixture["requests"]:
                out.append((req["code"], req["version"], req["ext"], req["body"]))
    return out


def java_property_names():
    text = (ROOT / "src/java_keys.rs").read_text()
    return re.findall(r'key\(\s*"([^"]+)"', text)


# ------------------------------------------------------------------------------------------------
# Encoders (what a Java client writes)


def json_header(code, version, ext, opaque=1, flag=0):
    header = {"code": code}
    if ext:
        header["extFields"] = ext
    header.update({"flag": flag, "language": "JAVA", "opaque": opaque,
                   "serializeTypeCurrentRPC": "JSON", "version": version})
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()


def binary_header(code, version, ext, opaque=1, flag=0, remark=b""):
    out = struct.pack(">hBhii", code, 0, version, opaque, flag)
    out += struct.pack(">i", len(remark)) + remark
    fields = b""
    for k, v in (ext or {}).items():
        k, v = str(k).encode(), str(v).encode()
        fields += struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
    return out + struct.pack(">i", len(fields)) + fields


def frame(header, serialize_type=0, body=b""):
    if isinstance(body, str):
        body = body.encode()
    word = (serialize_type << 24) | len(header)
    return struct.pack(">iI", 4 + len(header) + len(body), word) + header + body


def lines(ext):
    return "".join(f"{k}={v}\n" for k, v in ext.items())


def compressed_raw(body, with_mappings):
    """The inflated form of a compressed RegisterBrokerBody, from its JSON form."""
    wrapper = body.get("topicConfigSerializeWrapper", {})

    def chunk(data):
        data = data.encode() if isinstance(data, str) else data
        return struct.pack(">i", len(data)) + data

    dv = wrapper.get("dataVersion", {"counter": 0, "stateVersion": 0, "timestamp": 0})
    out = chunk(json.dumps(dv, separators=(",", ":")))
    topics = wrapper.get("topicConfigTable", {})
    out += struct.pack(">i", len(topics))
    for t in topics.values():
        attrs = json.dumps(t.get("attributes", {}), separators=(",", ":"))
        out += chunk(f'{t["topicName"]} {t["readQueueNums"]} {t["writeQueueNums"]} {t["perm"]} {t["topicFilterType"]} {attrs}')
    out += chunk(json.dumps(body.get("filterServerList", []), separators=(",", ":")))
    if with_mappings:
        out += struct.pack(">i", 1)
        out += chunk('{"bname":"broker-a","currIdMap":{0:0},"dirty":false,"epoch":1,"scope":"__global__","topic":"S","totalQueues":1}')
    return out


def proxy_v2(command, family, payload, tlvs=b""):
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    rest = payload + tlvs
    return sig + bytes([0x20 | command, family]) + struct.pack(">H", len(rest)) + rest


# ------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "fuzz/corpus")
    args = parser.parse_args()
    s = Seeds(args.out)
    golden = golden_vectors()
    m = manifest()
    requests = manifest_requests(m)
    captured_headers = capture_lines("header")
    captured_bodies = capture_lines("body")

    # Frames: every golden vector, every captured client frame, each manifest request with a JSON
    # and with a ROCKETMQ header, and a few streams of several frames.
    frames = list(golden.values()) + fixture_frames()
    for code, version, ext, body in requests:
        frames.append(frame(json_header(code, version, ext), 0, body or b""))
        frames.append(frame(binary_header(code, version, ext), 1, body or b""))
    for f in frames:
        s.add("frame_stream", b"\x00" + f)
    s.add("frame_stream", b"\x00" + b"".join(fixture_frames()))
    s.add("frame_stream", b"\x2a" + golden["V1"] + golden["V2"] + golden["V8"])
    s.add("frame_stream", b"\x85" + golden["V5"] + golden["V3"])

    # Headers, split out of the frames.
    for f in frames:
        word = struct.unpack(">I", f[4:8])[0] if len(f) >= 8 else 0
        header = f[8 : 8 + (word & 0xFFFFFF)]
        if word >> 24 == 0 and header:
            s.add("json_header", header)
        elif word >> 24 == 1 and header:
            s.add("binary_header", header)
    for h in captured_headers + rust_json_literals("protocol/src/header_codec.rs"):
        s.add("json_header", h)
    s.add("binary_header", binary_header(17, 479, None, flag=1, remark=b"No topic route info"))

    # Typed headers: the ext fields of every request and captured header.
    exts = [ext for _, _, ext, _ in requests if ext]
    for h in captured_headers:
        try:
            ext = json.loads(h).get("extFields")
        except ValueError:
            continue
        if ext:
            exts.append(ext)
    exts.append({"clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a",
                 "brokerId": "0", "epoch": "1", "maxOffset": "100", "confirmOffset": "100",
                 "heartbeatTimeoutMills": "10000", "electionPriority": "1"})
    exts.append({"topic": "T", "__ZONE_MODE": "true", "__ZONE_NAME": "zone-a", "acceptStandardJsonOnly": "true"})
    exts.append({"cluster": "DefaultCluster", "topic": "T", "clusterName": "c", "namespace": "ns", "key": "k",
                 "value": "v", "masterAddr": "a", "heartbeatTimeoutMillis": "30000", "compressed": "true",
                 "__ZONE_NAME": "z"})
    for ext in exts:
        s.add("typed_headers", lines(ext))

    # REGISTER_BROKER bodies: control byte 6 = version 479, 4 = 409, 0 = version 0.
    bodies = [body for code, _, _, body in requests if code == 103 and body]
    bodies += [b for b in rust_json_literals("protocol/src/body.rs") if "topicConfigSerializeWrapper" in b]
    for body in bodies:
        s.add("register_body", b"\x06" + body.encode())
        s.add("register_body", b"\x04" + body.encode())
    wrapper = json.loads(bodies[0])["topicConfigSerializeWrapper"]
    s.add("register_body", b"\x00" + json.dumps(wrapper, separators=(",", ":")).encode())

    # Compressed bodies: V9 as the zlib stream (control bit 1) and inflated, and the manifest's
    # registrations in the inflated form, with (bit 0) and without the mapping section.
    zipped = v9_zlib()
    s.add("register_body_compressed", b"\x03" + zipped)
    s.add("register_body_compressed", b"\x01" + zlib.decompress(zipped))
    for body in bodies:
        parsed = json.loads(body.replace("{0:", '{"0":').replace(",1:", ',"1":'))
        s.add("register_body_compressed", b"\x01" + compressed_raw(parsed, True))
        s.add("register_body_compressed", b"\x00" + compressed_raw(parsed, False))
        s.add("register_body_compressed", b"\x02" + zlib.compress(compressed_raw(parsed, False)))

    # JSON bodies: every Java fixture, every captured body, every body literal of the tests.
    for path in sorted((ROOT / "tests/fixtures").glob("*.json")):
        if path.name != "java_5_5_0_manifest.json":
            s.add("json_bodies", path.read_bytes())
    for body in captured_bodies + bodies + rust_json_literals("protocol/src/body.rs"):
        s.add("json_bodies", body)
    kv = {}
    for state in m["states"]:
        for e in state.get("kv", []):
            kv.setdefault(e["namespace"], {})[e["key"]] = e["value"]
    for table in kv.values():
        s.add("json_bodies", json.dumps({"table": table}, separators=(",", ":"), ensure_ascii=False))

    # Properties: the parser's own test text, and an update naming every Java key.
    props = (ROOT / "protocol/src/properties.rs").read_text()
    m_text = re.search(r'let text = "(.*?)";', props)
    s.add("java_properties", m_text.group(1).encode().decode("unicode_escape"))
    s.add("java_properties", "{key=value}")
    values = {"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "5000",
              "waitSecondsForService": "45", "serverWorkerThreads": "8", "enableTopicList": "FALSE",
              "serverChannelMaxIdleTimeSeconds": "120", "productEnvName": "center"}
    names = java_property_names()
    s.add("java_properties", "".join(f"{n}={values.get(n, 'true')}\n" for n in names))
    for n in names:
        s.add("java_properties", f"{n}={values.get(n, 'false')}\n")
    s.add("java_properties", "# comment\r\nlistenPort = 9876\r\nbindAddress : 0.0.0.0\r\nkey\\u0041=va\\\n    lue\n")

    # PROXY headers, each followed by the first bytes of a frame.
    v4 = bytes([10, 9, 8, 7, 127, 0, 0, 1]) + struct.pack(">HH", 40000, 9876)
    v6 = bytes(range(16)) + bytes(15) + b"\x01" + struct.pack(">HH", 40000, 9876)
    tail = golden["V1"][:16]
    for header in [
        b"PROXY TCP4 10.1.2.3 127.0.0.1 40000 9876\r\n",
        b"PROXY TCP6 2001:db8::1 ::1 40000 9876\r\n",
        b"PROXY UNKNOWN\r\n",
        b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n",
        proxy_v2(1, 0x11, v4),
        proxy_v2(1, 0x21, v6),
        proxy_v2(0, 0x00, b""),
        proxy_v2(1, 0x31, b"/tmp/a".ljust(108, b"\0") + b"/tmp/b".ljust(108, b"\0")),
        proxy_v2(1, 0x11, v4, b"\x01\x00\x02h2" + b"\x02\x00\x04host" + b"\x20\x00\x05\x01\x00\x00\x00\x00"),
    ]:
        s.add("proxy_header", header + tail)

    # Access control: a white-address pattern line, then an ACL file (plain_acl.yml, users).
    acl_seeds = [
        "192.168.1.{1,7}\nglobalWhiteRemoteAddresses:\n  - 10.10.103.*\naccounts:\n"
        "  - accessKey: rocketmq2\n    secretKey: 12345678\n    whiteRemoteAddress: 192.168.1.*\n"
        "    admin: true\n",
        "*\nusers:\n  - username: ops\n    password: s3cret\n    userType: Super\n"
        "    userStatus: enable\n",
        "fe80:0000:0000:0000:0000:0000:0000:1-ff\naccounts:\n  - accessKey: a\n    secretKey: b\n",
        "10.0.0.0/8\nglobalWhiteRemoteAddresses: null\naccounts:\n  - &a {accessKey: k, secretKey: s}\n",
    ]
    for seed in acl_seeds:
        s.add("acl_file", seed)

    for target, n in sorted(s.count.items()):
        print(f"{target}: {n} seeds")


if __name__ == "__main__":
    main()
