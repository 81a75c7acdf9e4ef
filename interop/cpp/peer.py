#!/usr/bin/env python3
"""C++-client interop peer of the rmq-namesrv test suite.

Drives the official rocketmq-client-cpp through the PyPI package ``rocketmq``
(0.4.4, a ctypes binding whose wheel bundles a prebuilt ``librocketmq.so``),
installed by ``interop/setup_go_cpp.sh`` into ``interop/.cache/cpp-venv``.

    peer.py produce --namesrv "a;b" --topic T --count N
    peer.py consume --namesrv "a;b" --topic T --group G --count N --timeout 60
    peer.py route   --namesrv "a;b" --topic T [--expect present|absent]

Every subcommand prints exactly one JSON result line on stdout
({"peer":"cpp","cmd":...,"ok":true|false,...}) and exits 0 on success, 1 on
failure, 2 on a usage error.  Every wait is bounded by --timeout; a client call
that hangs past it ends the process (the C++ client cannot be interrupted).

The C++ client writes its log under $HOME/logs/rocketmq-cpp/.  This script
points HOME (before loading the library) at a fresh temporary directory that
it deletes at exit, or at --home DIR, which it keeps.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VENV_DIR = os.path.join(HERE, "..", ".cache", "cpp-venv")
VENV_PY = os.path.join(VENV_DIR, "bin", "python")

LOG_LEVELS = {"fatal": 1, "error": 2, "warn": 3, "info": 4, "debug": 5, "trace": 6}


def ensure_binding():
    """Re-exec under the setup script's venv if ``rocketmq`` is not importable here."""
    try:
        import importlib.util

        if importlib.util.find_spec("rocketmq") is not None:
            return
    except Exception:
        pass
    if os.path.exists(VENV_PY) and os.path.realpath(sys.prefix) != os.path.realpath(VENV_DIR) \
            and not os.environ.get("RMQ_CPP_PEER_REEXEC"):
        os.environ["RMQ_CPP_PEER_REEXEC"] = "1"
        os.execv(VENV_PY, [VENV_PY, os.path.abspath(__file__)] + sys.argv[1:])
    sys.stderr.write("the 'rocketmq' package is not installed; run interop/setup.sh (it runs setup_go_cpp.sh)\n")
    sys.exit(2)


class Peer:
    def __init__(self, args):
        self.args = args
        self.fields = {"peer": "cpp", "cmd": args.cmd, "topic": args.topic, "namesrv": args.namesrv}
        self.start = time.monotonic()
        self.home_is_temp = args.home is None
        self.home = args.home or tempfile.mkdtemp(prefix="rmq-cpp-peer-")
        os.makedirs(self.home, exist_ok=True)
        # Must happen before librocketmq.so is loaded and before any client
        # object exists: the library resolves its log directory from $HOME.
        os.environ["HOME"] = self.home
        self.fields["home"] = None if self.home_is_temp else self.home

    def finish(self, ok, **extra):
        self.fields.update(extra)
        self.fields["ok"] = bool(ok)
        self.fields.setdefault("elapsed_ms", int((time.monotonic() - self.start) * 1000))
        sys.stdout.write(json.dumps(self.fields) + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
        if self.home_is_temp:
            shutil.rmtree(self.home, ignore_errors=True)
        # os._exit: skip interpreter teardown, where the binding's __del__
        # methods would call into C++ threads that may still be running.
        os._exit(0 if ok else 1)

    def bounded(self, fn, seconds, what):
        """Run fn() in a thread; give up (and end the process) after `seconds`."""
        box = {}

        def run():
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - reported in the result line
                box["error"] = e

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(seconds)
        if t.is_alive():
            self.finish(False, error="%s did not return within %ss" % (what, seconds))
        if "error" in box:
            raise box["error"]
        return box.get("value")


def set_log(dll, kind, handle, level):
    lvl = LOG_LEVELS[level]
    # SetXxxLogPath is a no-op in this client version (the log always goes to
    # $HOME/logs/rocketmq-cpp/<pid>_rocketmq-cpp.log.N); the size argument of
    # SetXxxLogFileNumAndSize is in MiB.
    getattr(dll, "Set%sLogLevel" % kind)(handle, lvl)
    getattr(dll, "Set%sLogFileNumAndSize" % kind)(handle, 1, 10)


def cmd_produce(peer):
    a = peer.args
    from rocketmq.client import Message, Producer, SendStatus
    from rocketmq.ffi import dll

    prefix = a.prefix or "cpp-%d" % time.time_ns()
    peer.fields.update(requested=a.count, prefix=prefix)
    deadline = time.monotonic() + a.timeout
    producer = Producer(a.group or "interop_cpp_producer", timeout=5000)
    set_log(dll, "Producer", producer._handle, a.log_level)
    producer.set_namesrv_addr(a.namesrv)
    try:
        peer.bounded(producer.start, max(1.0, deadline - time.monotonic()), "producer start")
    except Exception as e:  # noqa: BLE001
        peer.finish(False, error="start: %s" % e)
    sent = failed = 0
    first_err = None
    msg_ids = []
    for i in range(a.count):
        left = deadline - time.monotonic()
        if left <= 0:
            failed += a.count - i
            first_err = first_err or "deadline exceeded"
            break
        body = "%s-%d" % (prefix, i)
        msg = Message(a.topic)
        msg.set_keys(body)
        msg.set_tags("interop")
        msg.set_body(body)
        try:
            res = peer.bounded(lambda: producer.send_sync(msg), left, "send_sync")
            if res.status == SendStatus.OK:
                sent += 1
                if len(msg_ids) < 3:
                    msg_ids.append(res.msg_id)
                continue
            failed += 1
            first_err = first_err or "send status %s" % res.status.name
        except Exception as e:  # noqa: BLE001
            failed += 1
            first_err = first_err or "%s: %s" % (type(e).__name__, e)
    peer.bounded(producer.shutdown, 15, "producer shutdown")
    extra = {"sent": sent, "failed": failed, "first_msg_ids": msg_ids}
    if first_err:
        extra["error"] = first_err
    peer.finish(sent == a.count and failed == 0, **extra)


def cmd_consume(peer):
    a = peer.args
    if not a.group:
        sys.stderr.write("consume: --group is required\n")
        sys.exit(2)
    from rocketmq.client import PushConsumer
    from rocketmq.ffi import dll

    peer.fields.update(group=a.group, requested=a.count)
    lock = threading.Lock()
    seen = set()
    state = {"deliveries": 0}
    done = threading.Event()

    def on_message(msg):
        body = msg.body or b""
        with lock:
            state["deliveries"] += 1
            if a.prefix and not body.decode("utf-8", "replace").startswith(a.prefix):
                return
            seen.add(msg.id)
            if len(seen) >= a.count:
                done.set()

    consumer = PushConsumer(a.group)
    set_log(dll, "PushConsumer", consumer._handle, a.log_level)
    consumer.set_namesrv_addr(a.namesrv)
    # The C API of this client version has no consume-from-where setter: the
    # C++ default is CONSUME_FROM_LAST_OFFSET, which for a group without a
    # committed offset starts at the offset the broker returns (0 on a fresh
    # 5.x broker whose first message is still in the store).
    consumer.subscribe(a.topic, on_message)
    try:
        peer.bounded(consumer.start, a.timeout, "consumer start")
    except Exception as e:  # noqa: BLE001
        peer.finish(False, error="start: %s" % e)
    ok = done.wait(max(0.0, a.timeout - (time.monotonic() - peer.start)))
    elapsed = int((time.monotonic() - peer.start) * 1000)
    peer.bounded(consumer.shutdown, 20, "consumer shutdown")
    with lock:
        extra = {"received": len(seen), "deliveries": state["deliveries"], "elapsed_ms": elapsed}
    if not ok:
        extra["error"] = "timeout after %ss" % a.timeout
    peer.finish(ok, **extra)


def any_namesrv_reachable(namesrv):
    """The C++ client reports an unreachable NameServer like a missing topic
    (no queues), so route tells the two apart with a plain TCP connect."""
    import socket

    for addr in filter(None, (x.strip() for x in namesrv.split(";"))):
        host, _, port = addr.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
            return True
        except (OSError, ValueError):
            continue
    return False


def cmd_route(peer):
    a = peer.args
    import ctypes

    from rocketmq.client import PullConsumer
    from rocketmq.ffi import _CMessageQueue, dll

    peer.fields["expect"] = a.expect
    consumer = PullConsumer(a.group or "interop_cpp_route")
    set_log(dll, "PullConsumer", consumer._handle, a.log_level)
    consumer.set_namesrv_addr(a.namesrv)
    try:
        peer.bounded(consumer.start, a.timeout, "pull consumer start")
    except Exception as e:  # noqa: BLE001
        peer.finish(False, error="start: %s" % e, result="ERROR")

    def fetch():
        # One GET_ROUTEINFO_BY_TOPIC (105) to the NameServer; the C++ client
        # turns the route's queueDatas into subscribe queues.
        mqs = ctypes.POINTER(_CMessageQueue)()
        size = ctypes.c_int()
        rc = dll.FetchSubscriptionMessageQueues(consumer._handle, a.topic.encode(),
                                                ctypes.pointer(mqs), ctypes.pointer(size))
        if int(rc) != 0:
            err = dll.GetLatestErrorMessage()
            return None, "status %d: %s" % (int(rc), err.decode("utf-8", "replace") if err else "")
        out = ["%s:%d" % (mqs[i].brokerName.decode(), mqs[i].queueId) for i in range(size.value)]
        dll.ReleaseSubscriptionMessageQueue(mqs)
        return out, None

    queues, err = peer.bounded(fetch, a.timeout, "FetchSubscriptionMessageQueues")
    peer.bounded(consumer.shutdown, 15, "pull consumer shutdown")
    if err is not None:
        peer.finish(False, error=err, result="ERROR")
    if not queues and not any_namesrv_reachable(a.namesrv):
        peer.finish(False, result="ERROR", error="no NameServer in %r accepts TCP connections" % a.namesrv)
    if not queues:
        # This client version never surfaces TOPIC_NOT_EXIST: the route call
        # returns NULL on code 17, DefaultMQPullConsumer logs "Can not find
        # Message Queue" and swallows it, and the C API returns OK with zero
        # queues.  An empty queue list is therefore reported as
        # TOPIC_NOT_EXIST (it can also mean a route without readable queues).
        peer.finish(a.expect == "absent", result="TOPIC_NOT_EXIST", read_queues=[],
                    note="C++ client returned no queues (it does not report TOPIC_NOT_EXIST itself)")
    queues.sort()
    brokers = sorted({q.rsplit(":", 1)[0] for q in queues})
    peer.finish(a.expect == "present", result="FOUND", read_queues=queues, brokers=brokers)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, default_timeout in (("produce", 60.0), ("consume", 60.0), ("route", 20.0)):
        s = sub.add_parser(name)
        s.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR") or "127.0.0.1:9876",
                       help="NameServer list, ';'-separated (default $NAMESRV_ADDR or 127.0.0.1:9876)")
        s.add_argument("--topic", required=True)
        s.add_argument("--group", default=None)
        s.add_argument("--timeout", type=lambda v: float(v.rstrip("s")), default=default_timeout,
                       help="overall deadline in seconds (a trailing 's' is accepted)")
        s.add_argument("--log-level", choices=sorted(LOG_LEVELS), default="error")
        s.add_argument("--home", default=None, help="keep the C++ client's files (logs) in this directory")
        if name in ("produce", "consume"):
            s.add_argument("--count", type=int, default=10)
            s.add_argument("--prefix", default="")
        if name == "route":
            s.add_argument("--expect", choices=("present", "absent"), default="present")
    args = p.parse_args()
    ensure_binding()
    peer = Peer(args)
    {"produce": cmd_produce, "consume": cmd_consume, "route": cmd_route}[args.cmd](peer)


if __name__ == "__main__":
    main()
