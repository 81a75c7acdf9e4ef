#!/usr/bin/env python3
"""Fake NameServer that answers GET_ROUTEINFO_BY_TOPIC (105) in a chosen encoding.

It shows which response encodings the Go and C++ clients accept, without a real
NameServer.  Every known topic routes to one broker (--broker, default
127.0.0.1:10911, 4 queues, perm 6), so a client's produce really reaches that
broker and fails if it mis-parsed the broker address.

    route_format_probe.py --port 29876 --mode standard --max-seconds 60 --topics InteropGo,TBW102

Modes (route body / response header):
    legacy      Java's legacy body, bare numeric keys {0:"..."}          / JSON header
    standard    valid JSON, quoted keys {"0":"..."}                      / JSON header
    spaced      standard with ", " and ": " separators                   / JSON header
    pretty      standard, indented over several lines                    / JSON header
    nullremark  legacy body                                              / JSON header with "remark":null,"extFields":null
    rocketmq    legacy body                                              / ROCKETMQ (binary, type 1) header

Unknown topics and other codes get TOPIC_NOT_EXIST (17).  Loopback only; stops
by itself after --max-seconds.  Results with the pinned clients are in README.md.
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time


def bodies(broker):
    legacy = ('{"brokerDatas":[{"brokerAddrs":{0:"%s"},"brokerName":"broker-a","cluster":"DefaultCluster",'
              '"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a",'
              '"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}') % broker
    standard = legacy.replace('{0:"', '{"0":"')
    parsed = json.loads(standard)
    return {
        "legacy": legacy,
        "standard": standard,
        "spaced": json.dumps(parsed),
        "pretty": json.dumps(parsed, indent=2),
        "nullremark": legacy,
        "rocketmq": legacy,
    }


def json_header(code, opaque, remark=None, extra=None):
    h = {"code": code, "flag": 1, "language": "JAVA", "opaque": opaque,
         "serializeTypeCurrentRPC": "JSON", "version": 479}
    if remark is not None:
        h["remark"] = remark
    if extra:
        h.update(extra)
    return json.dumps(h, separators=(",", ":"), sort_keys=True).encode()


def rocketmq_header(code, opaque):
    # code, language (0 = JAVA), version, opaque, flag, remark length 0, ext length 0
    return struct.pack(">hBhiiii", code, 0, 479, opaque, 1, 0, 0)


def frame(stype, header, body=b""):
    return struct.pack(">iI", 4 + len(header) + len(body), (stype << 24) | len(header)) + header + body


def parse_request_header(word, raw):
    if word >> 24 == 0:
        return json.loads(raw)
    code, _lang, _ver, opaque, _flag = struct.unpack(">hBhii", raw[:13])
    off = 13
    (rlen,) = struct.unpack(">i", raw[off:off + 4])
    off += 4 + max(rlen, 0)
    (elen,) = struct.unpack(">i", raw[off:off + 4])
    off += 4
    ext, end = {}, off + elen
    while off < end:
        (kl,) = struct.unpack(">h", raw[off:off + 2])
        k = raw[off + 2:off + 2 + kl].decode()
        off += 2 + kl
        (vl,) = struct.unpack(">i", raw[off:off + 4])
        ext[k] = raw[off + 4:off + 4 + vl].decode()
        off += 4 + vl
    return {"code": code, "opaque": opaque, "extFields": ext}


def serve(conn, mode, body, topics):
    buf = b""
    conn.settimeout(60)
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            while len(buf) >= 8:
                (length,) = struct.unpack(">i", buf[:4])
                if len(buf) < 4 + length:
                    break
                (word,) = struct.unpack(">I", buf[4:8])
                hlen = word & 0xFFFFFF
                req = parse_request_header(word, buf[8:8 + hlen])
                buf = buf[4 + length:]
                topic = (req.get("extFields") or {}).get("topic")
                opaque = req["opaque"]
                sys.stderr.write("request code=%s topic=%s opaque=%s\n" % (req["code"], topic, opaque))
                if req["code"] != 105 or topic not in topics:
                    remark = "No topic route info in name server for the topic: %s" % topic
                    conn.sendall(frame(0, json_header(17, opaque, remark)))
                elif mode == "rocketmq":
                    conn.sendall(frame(1, rocketmq_header(0, opaque), body))
                elif mode == "nullremark":
                    conn.sendall(frame(0, json_header(0, opaque, extra={"remark": None, "extFields": None}), body))
                else:
                    conn.sendall(frame(0, json_header(0, opaque), body))
    except (OSError, ValueError) as e:
        sys.stderr.write("connection error: %r\n" % (e,))
    finally:
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", choices=sorted(bodies("x")), required=True)
    p.add_argument("--broker", default="127.0.0.1:10911")
    p.add_argument("--topics", default="TBW102", help="comma-separated topics that have a route")
    p.add_argument("--max-seconds", type=float, default=60.0)
    a = p.parse_args()
    if not a.broker.startswith("127."):
        raise SystemExit("loopback broker addresses only")
    body = bodies(a.broker)[a.mode].encode()
    topics = set(t for t in a.topics.split(",") if t)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", a.port))
    srv.listen(16)
    srv.settimeout(0.5)
    deadline = time.monotonic() + a.max_seconds
    while time.monotonic() < deadline:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn, a.mode, body, topics), daemon=True).start()
    srv.close()


if __name__ == "__main__":
    main()
