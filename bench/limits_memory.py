#!/usr/bin/env python3
"""Memory at each limit: rmq-namesrv's resident memory while clients push the limits of
docs/limits.md, one fresh server instance per run.

    cargo build --release -p rmq-namesrv --bin rmq-namesrv
    python3 bench/limits_memory.py                  # every scenario, about 5 minutes
    python3 bench/limits_memory.py --scenarios 1,4  # a subset
    python3 bench/limits_memory.py --bin PATH       # another build of the server

Each run starts target/release/rmq-namesrv on 127.0.0.1:<free port> with `--log-level warn` and a
--config TOML in a temporary directory (its [kv] files live there; only the [server] keys a
scenario names differ from the defaults), reads VmRSS/VmHWM from /proc/<pid>/status before and
after (when RSS is still 32 MiB above the idle server's 3 s after, again once it is given back,
at most 12 s later), asks a probe (GET_ROUTEINFO_BY_TOPIC, code 105, on a new connection)
afterwards, and stops the server by its PID (SIGTERM, SIGKILL after a timeout).

  1  compressed REGISTER_BROKER bombs (the issue's case), 2 and then 20 connections at once, each
     sending one ~1 MB zlib body that inflates to 1 GiB (built once, in a streaming way):
       zeros     1 GiB of zeros (the first chunk is an empty DataVersion)
       nonsense  "nonsense" repeated, then zeros (the first length word declares 1.8 GB)
       huge      well-formed start: DataVersion `{}`, 1 topic, a topic chunk declaring 2 GiB
       at-limit  well-formed start, a topic chunk of zeros declaring max_inflated_body_bytes - 14:
                 the server inflates up to its limit, then the topic text does not parse
       spaces    as at-limit, the chunk made of spaces (the topic-text splitter's worst case)
       topics    distinct short topics, count 2^31-1, until the limit (the decoded result's worst
                 case; inflates to a little more than the limit)
  2  1,000 slowloris connections, each declaring a 16 MiB frame and sending its first 64 KiB:
     held 10 s with the default frame_timeout (30 s), then again with frame_timeout = 3 s to see
     the closes.
  3  100 connections with SO_RCVBUF = 4 KiB that pipeline 500 GET_ALL_TOPIC_LIST_FROM_NAMESERVER
     (206) each against 10,000 registered topics (~330 KB answers) and never read: held until the
     RSS stops growing (10-40 s) with the default write_timeout (30 s), then with
     write_timeout = 5 s until the server has closed them all (at most 30 s).
     Holds end early when the server's RSS passes --rss-cap-mib (4096).
  4  a flood: 50 connections pipelining 10,000 requests each without waiting, BROKER_HEARTBEAT
     (904) in one run and GET_BROKER_CLUSTER_INFO (106) in another; SYSTEM_BUSY "[OVERLOAD]"
     answers counted.

"bound" is what docs/limits.md lets the scenario hold beyond the idle server (stated per
scenario); a peak growth above it is flagged. Prints a Markdown table, then one line
`BENCH_RESULT {json}`. Every loop is bounded in count and time; every socket is closed.
Python 3 standard library only; nothing is built here.
"""

import argparse
import bisect
import json
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BIN = ROOT / "target" / "release" / "rmq-namesrv"
HOST = "127.0.0.1"

REGISTER_BROKER = 103
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
GET_ALL_TOPIC_LIST = 206
BROKER_HEARTBEAT = 904
CODE_NAMES = {0: "SUCCESS", 1: "SYSTEM_ERROR", 2: "SYSTEM_BUSY", 3: "NOT_SUPPORTED",
              17: "TOPIC_NOT_EXIST"}
# A 4.x broker (compressedRegister is a 4.x feature): no static-topic mapping section.
VERSION_4X = 401
CLUSTER = "BenchLimitsCluster"
PROBE_TOPIC = "BenchLimitsProbe"
KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB


# --------------------------------------------------------------------------------------------
# Wire


def encode(code, opaque, ext=None, body=b"", version=VERSION_4X):
    """One request frame with a JSON header (docs/protocol.md#frames)."""
    header = {"code": code, "flag": 0, "language": "JAVA", "opaque": opaque,
              "serializeTypeCurrentRPC": "JSON", "version": version}
    if ext is not None:
        header["extFields"] = {k: str(v) for k, v in ext.items()}
    hb = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(hb) + len(body), len(hb)) + hb + body


def pipelined(code, ext, count):
    """`count` copies of one request with opaques 1..count, as one buffer."""
    head = json.dumps({"code": code, "extFields": {k: str(v) for k, v in (ext or {}).items()},
                       "flag": 0, "language": "JAVA"}, separators=(",", ":"))[:-1].encode()
    tail = b',"serializeTypeCurrentRPC":"JSON","version":%d}' % VERSION_4X
    frames = []
    for opaque in range(1, count + 1):
        hb = head + b',"opaque":%d' % opaque + tail
        frames.append(struct.pack(">ii", 4 + len(hb), len(hb)) + hb)
    return b"".join(frames)


def register_ext(name, addr, compressed):
    return {"brokerName": name, "brokerAddr": addr, "clusterName": CLUSTER,
            "haServerAddr": addr, "brokerId": 0, "compressed": "true" if compressed else "false",
            "bodyCrc32": 0}


class Answer:
    __slots__ = ("code", "opaque", "remark", "remark_len", "header_len", "body_len")

    def __init__(self, header, stype, body_len):
        self.header_len = len(header)
        self.body_len = body_len
        self.opaque = None
        if stype == 1:  # ROCKETMQ header: code int16 first
            self.code = struct.unpack_from(">h", header, 0)[0] if len(header) >= 2 else None
            self.remark, self.remark_len = "", 0
            return
        if len(header) > MIB:  # a huge remark: do not parse it whole
            m = re.match(rb'\s*\{"code":(-?\d+)', header)
            self.code = int(m.group(1)) if m else None
            at = header.find(b'"remark":"')
            self.remark = header[at + 10:at + 90].decode("utf-8", "replace") if at >= 0 else ""
            self.remark_len = len(header) - at if at >= 0 else 0
            return
        try:
            h = json.loads(header)
        except ValueError:
            self.code, self.remark, self.remark_len = None, "<unparsable header>", 0
            return
        self.code = h.get("code")
        self.opaque = h.get("opaque")
        self.remark = h.get("remark") or ""
        self.remark_len = len(self.remark)


class FrameReader:
    """Answers out of a byte stream; the body is only measured."""
    MAX = 1 << 30

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data
        buf, pos, out = self.buf, 0, []
        while len(buf) - pos >= 4:
            (length,) = struct.unpack_from(">i", buf, pos)
            if length < 4 or length > self.MAX:
                raise ValueError(f"bad frame length {length}")
            if len(buf) - pos < 4 + length:
                break
            (word,) = struct.unpack_from(">I", buf, pos + 4)
            hlen = word & 0xFFFFFF
            out.append(Answer(bytes(buf[pos + 8:pos + 8 + hlen]), word >> 24, length - 4 - hlen))
            pos += 4 + length
        if pos:
            del buf[:pos]
        return out


class Conn:
    """One client connection: bytes to write, answers to expect, what it saw."""

    def __init__(self, sock, out=b"", expect=0, read=True):
        self.sock = sock
        self.out = memoryview(out)
        self.sent = 0
        self.expect = expect
        self.read = read
        self.reader = FrameReader()
        self.answers = 0
        self.codes = Counter()
        self.overload = 0
        self.remarks = Counter()
        self.max_remark = 0
        self.bytes_in = 0
        self.closed = None  # "eof", "rst", ...

    def writing(self):
        return self.closed is None and self.sent < len(self.out)

    def done(self):
        return self.closed is not None or (not self.writing() and self.answers >= self.expect)

    def write_some(self):
        try:
            self.sent += self.sock.send(self.out[self.sent:self.sent + 256 * KIB])
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            self.closed = "rst" if isinstance(e, (ConnectionResetError, BrokenPipeError)) \
                else type(e).__name__

    def read_some(self, max_rounds=16):
        for _ in range(max_rounds):
            try:
                data = self.sock.recv(MIB)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.closed = "rst" if isinstance(e, ConnectionResetError) else type(e).__name__
                return
            if not data:
                self.closed = "eof"
                return
            self.bytes_in += len(data)
            try:
                answers = self.reader.feed(data)
            except ValueError:
                self.closed = "garbage"
                return
            for a in answers:
                self.answers += 1
                self.codes[a.code] += 1
                if a.code == 2 and a.remark.startswith("[OVERLOAD]"):
                    self.overload += 1
                if a.remark:
                    self.remarks[re.sub(r"\d+", "N", a.remark[:72])] += 1
                self.max_remark = max(self.max_remark, a.remark_len)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def drive(conns, timeout):
    """Writes and reads every connection until each is done or closed, at most `timeout` s."""
    sel = selectors.DefaultSelector()

    def interest(c):
        return (selectors.EVENT_WRITE if c.writing() else 0) | \
            (selectors.EVENT_READ if c.read else 0)

    live = 0
    for c in conns:
        c.sock.setblocking(False)
        if not c.done() and interest(c):
            sel.register(c.sock, interest(c), c)
            live += 1
    deadline = time.monotonic() + timeout
    try:
        while live and time.monotonic() < deadline:
            for key, mask in sel.select(timeout=0.25):
                c = key.data
                was = key.events
                if mask & selectors.EVENT_WRITE and c.writing():
                    c.write_some()
                if c.closed is None and mask & selectors.EVENT_READ:
                    c.read_some()
                if c.done() or not interest(c):
                    sel.unregister(c.sock)
                    live -= 1
                elif interest(c) != was:
                    sel.modify(c.sock, interest(c), c)
    finally:
        sel.close()


def connect(port, rcvbuf=None, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    try:
        s.connect((HOST, port))
    except OSError:
        s.close()
        raise
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request(sock, frame, timeout=30.0):
    """Sends one request on a blocking socket and waits for its answer."""
    sock.settimeout(timeout)
    sock.sendall(frame)
    reader = FrameReader()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        data = sock.recv(MIB)
        if not data:
            raise ConnectionError("closed by the server")
        for a in reader.feed(data):
            return a
    raise TimeoutError("no answer")


def probe(port, timeout=5.0):
    """GET_ROUTEINFO_BY_TOPIC on a new connection: does the server still answer?"""
    t0 = time.monotonic()
    try:
        with connect(port, timeout=timeout) as s:
            a = request(s, encode(GET_ROUTEINFO_BY_TOPIC, 1, {"topic": PROBE_TOPIC}), timeout)
            return {"ok": True, "code": a.code, "ms": round((time.monotonic() - t0) * 1000, 1)}
    except (OSError, ConnectionError, TimeoutError, ValueError) as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}",
                "ms": round((time.monotonic() - t0) * 1000, 1)}


# --------------------------------------------------------------------------------------------
# Bodies


def raw_deflate(data, flush_mode):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(flush_mode)


class ZeroTail:
    """Raw deflate of `segments` x `segment` zero bytes, built once: a fully flushed segment
    refers to nothing before it, so copies of it can follow any fully flushed prefix."""

    def __init__(self, segment=64 * MIB, segments=16):
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        zeros = bytes(MIB)
        parts = [c.compress(zeros) for _ in range(segment // MIB)]
        parts.append(c.flush(zlib.Z_FULL_FLUSH))
        self.deflated = b"".join(parts) * segments
        self.length = segment * segments

    def body(self, prefix):
        """zlib stream of `prefix` followed by the zeros (78 DA, as Java writes it)."""
        head = raw_deflate(prefix, zlib.Z_FULL_FLUSH) if prefix else b""
        final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
        adler = zlib.adler32(prefix)
        a, b = adler & 0xFFFF, adler >> 16
        b = (b + self.length * a) % 65521  # zeros add nothing to a and a per byte to b
        return b"\x78\xda" + head + self.deflated + final + struct.pack(">I", (b << 16) | a)


def self_test_tail():
    """The stitched stream must inflate to prefix + zeros (a small copy of the construction)."""
    tail = ZeroTail(segment=MIB, segments=3)
    prefix = b"nonsense" * 100
    assert zlib.decompress(tail.body(prefix)) == prefix + bytes(3 * MIB)
    assert zlib.decompress(tail.body(b"")) == bytes(3 * MIB)


def i32(n):
    return struct.pack(">i", n)


def bomb_bodies(max_inflated):
    """The scenario-1 bodies: name -> (body, what it inflates to)."""
    tail = ZeroTail()
    limit_chunk = max_inflated - 14  # 4 + 2 ("{}") + 4 (count) + 4 (length) + chunk = the limit
    start = i32(2) + b"{}" + i32(1)
    bodies = {
        "zeros": (tail.body(b""), tail.length),
        "nonsense": (tail.body(b"nonsense" * 1024), 8 * KIB + tail.length),
        "huge": (tail.body(start + i32(0x7FFFFFF0)), 14 + tail.length),
        "at-limit": (tail.body(start + i32(limit_chunk)), 14 + tail.length),
        "spaces": (tail.body(start + i32(limit_chunk) + b" " * limit_chunk),
                   14 + limit_chunk + tail.length),
    }
    raw = [i32(2), b"{}", i32(0x7FFFFFFF)]
    size, n = 10, 0
    while size <= max_inflated + 4 * KIB:
        text = b"%x 1 1 6 SINGLE_TAG" % n
        raw += [i32(len(text)), text]
        size += 4 + len(text)
        n += 1
    raw = b"".join(raw)
    bodies["topics"] = (zlib.compress(raw, 9), len(raw))
    return bodies, n


def registration_body(topics):
    """A well-formed compressed RegisterBrokerBody (4.x) with these topics."""
    dv = b'{"counter":1,"timestamp":%d}' % int(time.time() * 1000)
    raw = [i32(len(dv)), dv, i32(len(topics))]
    for t in topics:
        text = f"{t} 8 8 6 SINGLE_TAG".encode()
        raw += [i32(len(text)), text]
    raw += [i32(2), b"[]"]
    return zlib.compress(b"".join(raw), 9)


def register(port, name, addr, topics):
    """Registers a broker; returns its open connection (closing it would unregister it)."""
    s = connect(port, timeout=30)
    a = request(s, encode(REGISTER_BROKER, 1, register_ext(name, addr, True),
                          registration_body(topics)), timeout=30)
    if a.code != 0:
        s.close()
        raise RuntimeError(f"registration refused: {a.code} {a.remark[:200]}")
    return s


# --------------------------------------------------------------------------------------------
# Server


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def toml_str(s):
    return json.dumps(str(s))


def effective_config(binary, workdir):
    """The server's defaults, as it prints them."""
    out = subprocess.run([binary, "--print-config"], capture_output=True, timeout=30,
                         cwd=workdir, check=True).stdout
    return tomllib.loads(out.decode())


class Server:
    def __init__(self, binary, workdir, name, server_keys):
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=re.sub(r"\W", "_", name) + "-", dir=workdir))
        lines = ["[server]", 'shutdown_grace = "1s"']
        lines += [f"{k} = {toml_str(v) if isinstance(v, str) else v}"
                  for k, v in server_keys.items()]
        lines += ["", "[kv]", f"path = {toml_str(self.dir / 'kvConfig.json')}",
                  f"config_store_path = {toml_str(self.dir / 'namesrv.properties')}",
                  "", "[log]", 'level = "warn"', ""]
        cfg = self.dir / "config.toml"
        cfg.write_text("\n".join(lines))
        self.log_path = self.dir / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(binary), "--config", str(cfg), "--listen", f"{HOST}:{self.port}",
             "--log-level", "warn"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited at start ({self.proc.returncode}): "
                                   + self.log_tail())
            try:
                socket.create_connection((HOST, self.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not accept within 20 s")
                time.sleep(0.05)
        time.sleep(0.3)

    def status(self):
        """VmRSS, VmHWM (KiB) and Threads, or None once the process is gone."""
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        out = {}
        for key in ("VmRSS", "VmHWM", "Threads"):
            m = re.search(rf"^{key}:\s+(\d+)", text, re.M)
            out[key] = int(m.group(1)) if m else None
        return out

    def sockets(self):
        """Sockets the server process holds open (its listener included)."""
        n = 0
        try:
            for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
                try:
                    n += os.readlink(f"/proc/{self.proc.pid}/fd/{fd}").startswith("socket:")
                except OSError:
                    pass
        except OSError:
            return None
        return n

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self, lines=8):
        try:
            if not self.log.closed:
                self.log.flush()
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_lines(self):
        try:
            return len(self.log_path.read_text(errors="replace").splitlines())
        except OSError:
            return None

    def stop(self):
        """SIGTERM, SIGKILL after 10 s. Returns how it ended."""
        ended = {"crashed_before_stop": self.proc.poll() is not None}
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
                ended["stopped_by"] = "SIGTERM"
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                ended["stopped_by"] = "SIGKILL"
        ended["returncode"] = self.proc.returncode
        if ended["crashed_before_stop"]:
            ended["log_tail"] = self.log_tail(20)
        self.log.close()
        return ended


# --------------------------------------------------------------------------------------------
# Scenarios


def summarize(conns, rec):
    codes, remarks = Counter(), Counter()
    closes = Counter()
    unanswered = 0
    for c in conns:
        codes.update(c.codes)
        remarks.update(c.remarks)
        if c.answers < c.expect:
            if c.closed:
                closes[c.closed] += 1
            else:
                unanswered += 1
    rec["answers"] = {CODE_NAMES.get(k, str(k)): v for k, v in sorted(codes.items(),
                                                                       key=lambda kv: str(kv[0]))}
    rec["overload"] = sum(c.overload for c in conns)
    rec["closed_before_all_answers"] = dict(closes)
    rec["no_answer_in_time"] = unanswered
    rec["remarks"] = dict(remarks.most_common(4))
    rec["max_remark_len"] = max((c.max_remark for c in conns), default=0)
    rec["bytes_written"] = sum(c.sent for c in conns)


def observed_text(rec):
    parts = [f"{k}×{v}" for k, v in rec.get("answers", {}).items()]
    if rec.get("overload"):
        parts.append(f"[OVERLOAD]×{rec['overload']}")
    closes = rec.get("closed_before_all_answers") or {}
    if closes:
        parts.append("closed before all answers: "
                     + ", ".join(f"{k}×{v}" for k, v in closes.items()))
    if rec.get("no_answer_in_time"):
        parts.append(f"no answer in time×{rec['no_answer_in_time']}")
    if rec.get("remarks"):
        top = max(rec["remarks"].items(), key=lambda kv: kv[1])[0]
        parts.append(f"remark “{top[:60]}”")
    if rec.get("max_remark_len", 0) > 4096:
        parts.append(f"longest remark {rec['max_remark_len']:,} B")
    return "; ".join(parts) or "none"


def s1_bombs(srv, rec, body, n):
    conns = []
    try:
        for i in range(n):
            addr = f"127.0.0.1:{20000 + i}"
            conns.append(Conn(connect(srv.port), encode(
                REGISTER_BROKER, i + 1, register_ext(f"bench-bomb-{i}", addr, True), body),
                expect=1))
        t0 = time.monotonic()
        drive(conns, timeout=90)
        rec["elapsed_s"] = round(time.monotonic() - t0, 2)
        summarize(conns, rec)
        rec["observed"] = observed_text(rec)
    finally:
        for c in conns:
            c.close()


RSS_CAP_KIB = 4 * 1024 * 1024  # --rss-cap-mib: a hold ends early above it (shared machines)


def watch(srv, socks, seconds, until=None, step=0.5):
    """Samples the server for `seconds`, noting client sockets that the server closed.
    `until(samples)` ends early, and so does an RSS above RSS_CAP_KIB (the last sample then
    says "capped"). Returns the samples and the close times."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    t0 = time.monotonic()
    closed_at = {}
    samples = []
    try:
        while time.monotonic() - t0 < seconds:
            for key, _ in sel.select(timeout=step):
                s = key.fileobj
                try:
                    data = s.recv(64 * KIB)
                    if data:
                        continue
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    pass
                closed_at[s.fileno()] = time.monotonic() - t0
                sel.unregister(s)
            st = srv.status() or {}
            samples.append({"t": round(time.monotonic() - t0, 1), "rss": st.get("VmRSS"),
                            "hwm": st.get("VmHWM"), "sockets": srv.sockets(),
                            "closed": len(closed_at)})
            if (st.get("VmRSS") or 0) > RSS_CAP_KIB:
                samples[-1]["capped"] = True
                break
            if until and until(samples):
                break
            if not srv.alive():
                break
    finally:
        sel.close()
    return samples, sorted(closed_at.values())


def s2_slowloris(srv, rec, conns_n, hold, max_frame, expect_closes):
    hb = json.dumps({"code": GET_ROUTEINFO_BY_TOPIC, "extFields": {"topic": PROBE_TOPIC},
                     "flag": 0, "language": "JAVA", "opaque": 1,
                     "serializeTypeCurrentRPC": "JSON", "version": VERSION_4X},
                    separators=(",", ":")).encode()
    declared = max_frame - 4  # the frame is max_frame bytes with its length field
    first = struct.pack(">ii", declared, len(hb)) + hb
    first += b"x" * (64 * KIB - len(first))
    socks = []
    failed_connect = failed_send = 0
    try:
        t0 = time.monotonic()
        for _ in range(conns_n):
            if time.monotonic() - t0 > 60:
                break
            try:
                s = connect(srv.port)
            except OSError:
                failed_connect += 1
                continue
            socks.append(s)
            try:
                s.sendall(first)
            except OSError:
                failed_send += 1
        rec["open_s"] = round(time.monotonic() - t0, 1)
        base = rec["sockets_before"] or 0

        def all_closed(samples):
            return samples[-1]["closed"] >= len(socks)

        samples, closes = watch(srv, socks, hold, until=all_closed if expect_closes else None)
        held = max(samples, key=lambda x: x["rss"] or 0) if samples else {}
        rec["held"] = {"max_rss_kib": held.get("rss"), "server_sockets": held.get("sockets"),
                       "server_sockets_extra": (held.get("sockets") or 0) - base}
        rec["held_s"] = samples[-1]["t"] if samples else 0
        rec["closes"] = len(closes)
        rec["first_close_s"] = round(closes[0], 1) if closes else None
        rec["last_close_s"] = round(closes[-1], 1) if closes else None
        rec["observed"] = (f"{len(socks)} opened in {rec['open_s']} s, {failed_connect} connect"
                           f" / {failed_send} send failures; server held "
                           f"{rec['held']['server_sockets_extra']} sockets; "
                           f"{len(closes)} closed by the server in {rec['held_s']} s")
        if closes:
            rec["observed"] += f" (at {rec['first_close_s']}–{rec['last_close_s']} s)"
    finally:
        for s in socks:
            s.close()


TOPIC_FMT = "BenchLimitsMemoryTopic-{:07d}"  # 30 bytes: a 10,000-topic list is ~330 KB


def s3_no_readers(srv, rec, conns_n, per_conn, hold, expect_closes):
    reg = register(srv.port, "bench-limits-lists", "127.0.0.1:10911",
                   [TOPIC_FMT.format(i) for i in range(10_000)])
    conns = []
    try:
        a = request(reg, encode(GET_ALL_TOPIC_LIST, 2, {}), timeout=30)
        rec["answer_bytes"] = a.body_len + a.header_len + 8
        frames = pipelined(GET_ALL_TOPIC_LIST, {}, per_conn)
        frame_ends, end = [], 0
        while end < len(frames):
            end += 4 + struct.unpack_from(">i", frames, end)[0]
            frame_ends.append(end)
        for _ in range(conns_n):
            conns.append(Conn(connect(srv.port, rcvbuf=4096), frames, expect=0, read=False))
        t0 = time.monotonic()
        drive(conns, timeout=20)
        rec["write_s"] = round(time.monotonic() - t0, 1)
        rec["requests_written"] = sum(bisect.bisect_right(frame_ends, c.sent) for c in conns)
        base = (rec["sockets_before"] or 0) + 1  # + the broker's connection

        def all_closed(samples):
            return samples[-1]["sockets"] is not None and samples[-1]["sockets"] <= base

        def plateau(samples):
            """Held 10 s, and RSS grew less than 1 MiB over the last 4 s."""
            if samples[-1]["t"] < 10 or len(samples) < 9:
                return False
            return (samples[-1]["rss"] or 0) - (samples[-9]["rss"] or 0) < 1024

        samples, _ = watch(srv, [], hold, until=all_closed if expect_closes else plateau)
        peak = max(samples, key=lambda x: x["rss"] or 0) if samples else {}
        rec["held_s"] = samples[-1]["t"] if samples else 0
        rec["capped"] = bool(samples and samples[-1].get("capped"))
        rec["rss_timeline_mib"] = [(x["t"], round((x["rss"] or 0) / 1024)) for x in samples[::2]]
        if peak.get("t"):
            rec["growth_mib_per_s"] = round(((peak["rss"] or 0) - rec["rss_before_kib"])
                                            / 1024 / peak["t"], 1)
            rec["peak_at_s"] = peak["t"]
        rec["held"] = {"max_rss_kib": peak.get("rss"),
                       "server_sockets_extra_at_peak": (peak.get("sockets") or 0) - base}
        gone = [x["t"] for x in samples if x["sockets"] is not None and x["sockets"] <= base]
        rec["all_closed_by_server_at_s"] = gone[0] if gone else None
        last = samples[-1] if samples else {}
        rec["server_sockets_extra_at_end"] = (last.get("sockets") or 0) - base
        if expect_closes:
            rec["rss_end_of_hold_kib"] = last.get("rss")
            # What the clients got before the close (bounded: 5 s, ~64 MiB in all).
            for c in conns:
                c.read, c.expect = True, per_conn
            drive(conns, timeout=5)
            summarize(conns, rec)
        text = (f"{rec['requests_written']:,} requests written in {rec['write_s']} s; "
                f"server held {rec['held']['server_sockets_extra_at_peak']} of {conns_n} "
                f"connections at the peak")
        if rec.get("growth_mib_per_s") is not None:
            text += (f"; RSS grew {rec['growth_mib_per_s']} MiB/s to its peak at "
                     f"{rec['peak_at_s']} s")
        if rec["capped"]:
            text += f"; **hold ended at the RSS cap** ({RSS_CAP_KIB // 1024} MiB)"
        if expect_closes:
            marks = [next((x for x in samples if x["t"] >= t), None) for t in (5, 10, 20, 30)]
            text += "; open at " + ", ".join(
                f"{x['t']:.0f} s: {(x['sockets'] or 0) - base}" for x in marks if x)
            at = rec["all_closed_by_server_at_s"]
            text += (f"; all closed by the server {at} s after the writes" if at is not None
                     else f"; {rec['server_sockets_extra_at_end']} still open after "
                          f"{rec['held_s']} s")
            got = sum(c.answers for c in conns)
            closes = rec.get("closed_before_all_answers") or {}
            text += f"; clients then read {got:,} answers and saw " + (
                ", ".join(f"{k}×{v}" for k, v in closes.items()) or "no close")
        else:
            text += (f"; {rec['server_sockets_extra_at_end']} still open when the hold ended "
                     f"at {rec['held_s']} s")
        rec["observed"] = text
    finally:
        for c in conns:
            c.close()
        reg.close()


def s4_flood(srv, rec, conns_n, per_conn, code):
    # Two topics: a first registration with exactly one topic is refused (as in Java).
    reg = register(srv.port, "bench-limits-flood", "127.0.0.1:10911",
                   ["BenchLimitsFlood-0", "BenchLimitsFlood-1"])
    conns = []
    try:
        ext = {"clusterName": CLUSTER, "brokerAddr": "127.0.0.1:10911",
               "brokerName": "bench-limits-flood", "brokerId": 0} \
            if code == BROKER_HEARTBEAT else {}
        frames = pipelined(code, ext, per_conn)
        for _ in range(conns_n):
            conns.append(Conn(connect(srv.port), frames, expect=per_conn))
        t0 = time.monotonic()
        drive(conns, timeout=120)
        rec["elapsed_s"] = round(time.monotonic() - t0, 1)
        summarize(conns, rec)
        got = sum(c.answers for c in conns)
        rec["answers_total"] = got
        rec["observed"] = (f"{got:,} answers in {rec['elapsed_s']} s: " + observed_text(rec))
    finally:
        for c in conns:
            c.close()
        reg.close()


# --------------------------------------------------------------------------------------------
# Runner


# RSS above the idle server's by more than this after a scenario: wait to see it given back.
RETAINED_KIB = 32 * 1024


def mib(kib):
    return "–" if kib is None else f"{kib / 1024:,.1f} MiB"


class Runner:
    def __init__(self, args, workdir, defaults):
        self.args = args
        self.workdir = workdir
        self.defaults = defaults["server"]
        self.records = []

    def run(self, scenario, sent, server_keys, fn, bound_kib=None, bound_why=""):
        rec = {"scenario": scenario, "sent": sent, "config": server_keys,
               "bound_kib": bound_kib, "bound_why": bound_why}
        print(f"-- {scenario}: {sent}" + (f" [{server_keys}]" if server_keys else ""), flush=True)
        srv = None
        try:
            srv = Server(self.args.bin, self.workdir, scenario, server_keys)
            st = srv.status()
            rec["rss_before_kib"], rec["hwm_before_kib"] = st["VmRSS"], st["VmHWM"]
            rec["sockets_before"] = srv.sockets()
            rec["log_lines_before"] = srv.log_lines()
            try:
                fn(srv, rec)
            except Exception as e:  # a scenario that fails is reported, not hidden
                rec["error"] = f"{type(e).__name__}: {e}"
            time.sleep(self.args.settle)
            st = srv.status()
            rec["alive_after"] = st is not None and srv.alive()
            if st:
                rec["hwm_kib"], rec["rss_after_kib"] = st["VmHWM"], st["VmRSS"]
                rec["threads_after"] = st["Threads"]
                # Memory still held: is it given back later? (At most --release-wait s more.)
                if st["VmRSS"] > rec["rss_before_kib"] + RETAINED_KIB:
                    t0 = time.monotonic()
                    while time.monotonic() - t0 < self.args.release_wait and srv.alive():
                        time.sleep(0.5)
                        later = srv.status()
                        if later and later["VmRSS"] <= rec["rss_before_kib"] + RETAINED_KIB:
                            break
                    later = srv.status() or {}
                    rec["rss_later_kib"] = later.get("VmRSS")
                    rec["rss_later_at_s"] = round(self.args.settle + time.monotonic() - t0, 1)
            rec["sockets_after"] = srv.sockets()
            rec["probe"] = probe(srv.port) if rec["alive_after"] else {"ok": False,
                                                                        "error": "server gone"}
            rec["log_lines"] = srv.log_lines()
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {e}"
        finally:
            if srv:
                rec["ended"] = srv.stop()
                if not self.args.keep:
                    shutil.rmtree(srv.dir, ignore_errors=True)
        if rec.get("hwm_kib") and rec.get("rss_before_kib"):
            rec["growth_kib"] = rec["hwm_kib"] - rec["rss_before_kib"]
            rec["over_bound"] = bound_kib is not None and rec["growth_kib"] > bound_kib
        p = rec.get("probe") or {}
        print(f"   observed: {rec.get('observed', '')}"
              + (f"  ERROR {rec['error']}" if rec.get("error") else ""))
        print(f"   RSS before {mib(rec.get('rss_before_kib'))}, peak {mib(rec.get('hwm_kib'))},"
              f" after {mib(rec.get('rss_after_kib'))}; probe "
              + (f"answered {CODE_NAMES.get(p.get('code'), p.get('code'))} in {p.get('ms')} ms"
                 if p.get("ok") else f"FAILED {p.get('error')}"), flush=True)
        self.records.append(rec)
        return rec

    # Scenario 1
    def scenario1(self):
        limit = self.defaults["max_inflated_body_bytes"]
        t0 = time.monotonic()
        self_test_tail()
        bodies, topics_n = bomb_bodies(limit)
        print(f"   bodies built in {time.monotonic() - t0:.1f} s: "
              + ", ".join(f"{k} {len(b) / MIB:.2f} MB→{inf / GIB:.3f} GiB"
                          for k, (b, inf) in bodies.items()), flush=True)
        budget = self.defaults["max_decoding_bytes"]
        for variant in self.args.bombs.split(","):
            body, inflated = bodies[variant]
            for n in (2, 20):
                what = (f"{n} conns × REGISTER_BROKER compressed, {len(body) / MB_D:.2f} MB "
                        f"zlib → {inflated / MIB:,.0f} MiB ({variant}"
                        + (f", {topics_n:,} topics" if variant == "topics" else "") + ")")
                bound = (n * len(body) + budget) // KIB
                self.run(f"1 bomb {variant} ×{n}", what, {},
                         lambda srv, rec, b=body, k=n: s1_bombs(srv, rec, b, k), bound,
                         "frames received + max_decoding_bytes")

    # Scenario 2
    def scenario2(self):
        n = self.args.slowloris
        max_frame = self.defaults["max_frame_bytes"]
        bound = n * 128  # KiB: what arrived (64 KiB) + at most 64 KiB ahead, per connection
        why = "per connection: 64 KiB arrived + ≤ 64 KiB read ahead"
        what = f"{n} conns × 64 KiB of a declared {max_frame / MIB:.0f} MiB frame"
        self.run("2 slowloris (frame_timeout 30 s)", what + ", held 10 s", {},
                 lambda srv, rec: s2_slowloris(srv, rec, n, 10, max_frame, False), bound, why)
        self.run("2 slowloris (frame_timeout 3 s)", what + ", held until closed (≤ 15 s)",
                 {"frame_timeout": "3s"},
                 lambda srv, rec: s2_slowloris(srv, rec, n, 15, max_frame, True), bound, why)

    # Scenario 3
    def scenario3(self):
        n, per = self.args.readers, 500
        queued = self.defaults["max_queued_bytes"]
        answer = 340 * KIB
        bound = (min(n * 4 * MIB, queued + n * 256 * KIB) + n * answer) // KIB
        why = "min(conns × 4 MiB, max_queued_bytes + conns × 256 KiB) + one answer per conn"
        what = f"{n} conns (SO_RCVBUF 4 KiB) × {per} pipelined 206 (10,000 topics), never read"
        self.run("3 no reader (write_timeout 30 s)",
                 what + ", held until RSS stops growing (10–40 s)", {},
                 lambda srv, rec: s3_no_readers(srv, rec, n, per, 40, False), bound, why)
        self.run("3 no reader (write_timeout 5 s)", what + ", held until closed (≤ 30 s)",
                 {"write_timeout": "5s"},
                 lambda srv, rec: s3_no_readers(srv, rec, n, per, 30, True), bound, why)

    # Scenario 4
    def scenario4(self):
        n, per = self.args.flood_conns, self.args.flood_requests
        for code, name in ((BROKER_HEARTBEAT, "BROKER_HEARTBEAT 904"),
                           (GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO 106")):
            self.run(f"4 flood {code}", f"{n} conns × {per:,} pipelined {name}", {},
                     lambda srv, rec, c=code: s4_flood(srv, rec, n, per, c))


MB_D = 1_000_000


def table(records):
    head = ("| Scenario | Sent | Answers / closes observed | RSS before | Peak RSS (VmHWM) "
            "| RSS after (→ later) | Bound (growth) | Probe after |")
    rows = [head, "|" + "---|" * 8]
    for r in records:
        p = r.get("probe") or {}
        probe_txt = (f"answered ({CODE_NAMES.get(p.get('code'), p.get('code'))}, "
                     f"{p.get('ms')} ms)" if p.get("ok") else f"**FAILED** {p.get('error', '')}")
        if not r.get("alive_after", True) or (r.get("ended") or {}).get("crashed_before_stop"):
            probe_txt += " **server died**"
        bound = "–" if r.get("bound_kib") is None else mib(r["bound_kib"])
        if r.get("growth_kib") is not None:
            bound += f" ({'**over**: ' if r.get('over_bound') else ''}+{mib(r['growth_kib'])})"
        obs = r.get("observed", "")
        if r.get("error"):
            obs += f" **error**: {r['error']}"
        extra = ""
        if r.get("held", {}).get("max_rss_kib"):
            extra = f" (sampled max while held {mib(r['held']['max_rss_kib'])})"
        if r.get("rss_end_of_hold_kib"):
            extra += f" (at the end of the hold {mib(r['rss_end_of_hold_kib'])})"
        after = mib(r.get("rss_after_kib"))
        if r.get("rss_later_kib") is not None:
            after += f" → {mib(r['rss_later_kib'])} at {r['rss_later_at_s']} s"
        rows.append(f"| {r['scenario']} | {r['sent']} | {obs.replace('|', '/')} "
                    f"| {mib(r.get('rss_before_kib'))} | {mib(r.get('hwm_kib'))}{extra} "
                    f"| {after} | {bound} | {probe_txt} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", type=Path, default=DEFAULT_BIN, help="the rmq-namesrv binary")
    ap.add_argument("--scenarios", default="1,2,3,4", help="comma-separated subset of 1,2,3,4")
    ap.add_argument("--bombs", default="zeros,nonsense,huge,at-limit,spaces,topics",
                    help="scenario-1 bodies to send")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds between the end of a scenario and the RSS-after reading")
    ap.add_argument("--release-wait", type=float, default=12.0,
                    help="at most this many more seconds for RSS still 32 MiB above the idle "
                         "server's to be given back (the 'later' reading)")
    ap.add_argument("--slowloris", type=int, default=1000, help="scenario-2 connections")
    ap.add_argument("--readers", type=int, default=100, help="scenario-3 connections")
    ap.add_argument("--flood-conns", type=int, default=50, help="scenario-4 connections")
    ap.add_argument("--flood-requests", type=int, default=10_000,
                    help="scenario-4 requests per connection")
    ap.add_argument("--rss-cap-mib", type=int, default=4096,
                    help="a scenario-2/3 hold ends early when the server's RSS passes this")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    args = ap.parse_args()
    global RSS_CAP_KIB
    RSS_CAP_KIB = args.rss_cap_mib * 1024
    if not args.bin.exists():
        sys.exit(f"{args.bin} not found: cargo build --release -p rmq-namesrv --bin rmq-namesrv")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * args.slowloris + 1024
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    t_start = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="rmq-limits-memory-"))
    try:
        defaults = effective_config(args.bin, workdir)
        runner = Runner(args, workdir, defaults)
        print("defaults: " + ", ".join(f"{k}={defaults['server'][k]}" for k in (
            "workers", "max_frame_bytes", "max_inflated_body_bytes", "max_decoding_bytes",
            "max_queued_bytes", "max_pending_reads", "max_pending_writes", "max_in_flight",
            "frame_timeout", "write_timeout")), flush=True)
        wanted = set(args.scenarios.split(","))
        for key, fn in (("1", runner.scenario1), ("2", runner.scenario2),
                        ("3", runner.scenario3), ("4", runner.scenario4)):
            if key in wanted:
                fn()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    records = runner.records
    print()
    print(table(records))
    findings = []
    for r in records:
        if r.get("over_bound"):
            findings.append(f"{r['scenario']}: peak growth {mib(r['growth_kib'])} over the bound "
                            f"{mib(r['bound_kib'])} ({r['bound_why']})")
        if not (r.get("probe") or {}).get("ok"):
            findings.append(f"{r['scenario']}: probe failed: {(r.get('probe') or {}).get('error')}")
        if (r.get("ended") or {}).get("crashed_before_stop"):
            findings.append(f"{r['scenario']}: server exited by itself "
                            f"({r['ended'].get('returncode')}): {r['ended'].get('log_tail', '')}")
        if r.get("error"):
            findings.append(f"{r['scenario']}: {r['error']}")
    print()
    print("findings: " + ("none" if not findings else ""))
    for f in findings:
        print(f"  - {f}")
    result = {"bench": "limits_memory", "elapsed_s": round(time.monotonic() - t_start, 1),
              "defaults": {k: v for k, v in defaults["server"].items()
                           if k.startswith("max_") or k.endswith("timeout") or k == "workers"},
              "runs": records, "findings": findings}
    print("BENCH_RESULT " + json.dumps(result, separators=(",", ":"), default=str))


if __name__ == "__main__":
    main()
