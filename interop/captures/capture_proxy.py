#!/usr/bin/env python3
"""Loopback TCP proxy that logs RocketMQ remoting frames in both directions.

Put it between a client and a NameServer to see exactly what the client sends
(header JSON or decoded ROCKETMQ binary header, body) and what it gets back:

    capture_proxy.py --listen 127.0.0.1:19876 --upstream 127.0.0.1:9876 \
        --out requests.txt --max-seconds 120

then point the client at 127.0.0.1:19876.  Clients only reach the NameServer
through the proxy; brokers they learn from routes are contacted directly.

Frame layout (spec section 1.2): int32 total length (excluding itself), then
one byte serialize type + 24-bit header length, header, body.  Stops by
itself after --max-seconds.  Loopback addresses only.
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time

LOCK = threading.Lock()


def loopback(hostport):
    host, port = hostport.rsplit(":", 1)
    if not (host.startswith("127.") or host in ("localhost", "::1")):
        raise SystemExit("only loopback addresses are allowed: %s" % hostport)
    return host, int(port)


def decode_rocketmq_header(h):
    """Decode a ROCKETMQ (binary, serialize type 1) header into a dict."""
    code, lang, version, opaque, flag = struct.unpack(">hBhii", h[:13])
    off = 13
    (rlen,) = struct.unpack(">i", h[off:off + 4])
    off += 4
    remark = h[off:off + rlen].decode("utf-8", "replace") if rlen > 0 else None
    off += max(rlen, 0)
    (elen,) = struct.unpack(">i", h[off:off + 4])
    off += 4
    ext = {}
    end = off + elen
    while off < end:
        (kl,) = struct.unpack(">h", h[off:off + 2])
        k = h[off + 2:off + 2 + kl].decode()
        off += 2 + kl
        (vl,) = struct.unpack(">i", h[off:off + 4])
        v = h[off + 4:off + 4 + vl].decode("utf-8", "replace")
        off += 4 + vl
        ext[k] = v
    return {"code": code, "languageCode": lang, "version": version, "opaque": opaque,
            "flag": flag, "remark": remark, "extFields": ext}


class Capture:
    def __init__(self, out, body_preview):
        self.out = out
        self.body_preview = body_preview
        self.t0 = time.monotonic()

    def log(self, conn_id, direction, word, header, body):
        stype = word >> 24
        hlen = word & 0xFFFFFF
        if stype == 0:
            text = header.decode("utf-8", "replace")
            kind = "JSON"
        else:
            try:
                text = json.dumps(decode_rocketmq_header(header), sort_keys=True)
            except Exception as e:  # noqa: BLE001
                text = "<undecodable ROCKETMQ header: %s> %s" % (e, header.hex())
            kind = "ROCKETMQ(decoded)"
        lines = ["[%7.3fs] conn %d %s  type=%d(%s) header_len=%d body_len=%d header_word=0x%08x" % (
            time.monotonic() - self.t0, conn_id, direction, stype, kind, hlen, len(body), word)]
        lines.append("  header: " + text)
        if body and self.body_preview:
            prev = body[:self.body_preview]
            lines.append("  body%s: %s" % (
                "" if len(body) <= self.body_preview else "[:%d]" % self.body_preview,
                prev.decode("utf-8", "replace")))
        with LOCK:
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()


def pump(src, dst, cap, conn_id, direction):
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            buf += data
            while len(buf) >= 8:
                (length,) = struct.unpack(">i", buf[:4])
                if length < 4 or len(buf) < 4 + length:
                    break
                (word,) = struct.unpack(">I", buf[4:8])
                hlen = word & 0xFFFFFF
                header = buf[8:8 + hlen]
                body = buf[8 + hlen:4 + length]
                cap.log(conn_id, direction, word, header, body)
                buf = buf[4 + length:]
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="127.0.0.1:PORT")
    p.add_argument("--upstream", required=True, help="127.0.0.1:PORT of the NameServer")
    p.add_argument("--out", default="-", help="log file (default stdout)")
    p.add_argument("--max-seconds", type=float, default=120.0)
    p.add_argument("--body-preview", type=int, default=600, help="bytes of each body to print (0: none)")
    a = p.parse_args()
    lhost, lport = loopback(a.listen)
    upstream = loopback(a.upstream)
    out = sys.stdout if a.out == "-" else open(a.out, "w", encoding="utf-8")
    cap = Capture(out, a.body_preview)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((lhost, lport))
    srv.listen(16)
    srv.settimeout(0.5)
    deadline = time.monotonic() + a.max_seconds
    conn_id = 0
    sys.stderr.write("capture_proxy: %s -> %s:%d for at most %ss\n" % (a.listen, upstream[0], upstream[1], a.max_seconds))
    while time.monotonic() < deadline:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        conn_id += 1
        u = socket.create_connection(upstream, timeout=5)
        u.settimeout(None)
        c.settimeout(None)
        with LOCK:
            out.write("[%7.3fs] conn %d opened\n" % (time.monotonic() - cap.t0, conn_id))
        threading.Thread(target=pump, args=(c, u, cap, conn_id, "client->namesrv"), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, cap, conn_id, "namesrv->client"), daemon=True).start()
    srv.close()
    out.flush()


if __name__ == "__main__":
    main()
