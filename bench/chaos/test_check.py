#!/usr/bin/env python3
"""The checker judged on made-up histories: each rule must fire on the history that breaks it
and stay quiet on the one that keeps it (python3 bench/chaos/test_check.py; no processes)."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True

import check  # noqa: E402

A, B = "10.77.0.31:10911", "10.77.0.32:10911"


def sync(t, epoch, master):
    return {"t": t, "k": "sync", "ns": "ns0", "groups": {"g": {"master": master, "epoch": epoch}}}


def route(t, ns, master, slave):
    return {"t": t, "k": "route", "ns": ns, "route": {"g": {"0": master, "2": slave}}}


def kinds(violations):
    return sorted({v["kind"] for v in violations})


class Rules(unittest.TestCase):
    def test_two_masters_one_epoch(self):
        v = []
        check.check_epochs([sync(1, 1, A), sync(2, 1, B)], v)
        self.assertEqual(kinds(v), ["two masters, one epoch (controller)"])
        v = []
        check.check_epochs([{"t": 1, "k": "broker", "b": "g-0", "id": 0, "epoch": 3},
                            {"t": 1.1, "k": "broker", "b": "g-1", "id": 0, "epoch": 3}], v)
        self.assertEqual(kinds(v), ["two masters, one epoch (brokers)"])

    def test_epochs_never_go_back(self):
        v = []
        check.check_epochs([sync(1, 2, A), sync(2, 1, A),
                            {"t": 1, "k": "broker", "b": "g-0", "id": 2, "epoch": 3},
                            {"t": 2, "k": "broker", "b": "g-0", "id": 2, "epoch": 2}], v)
        self.assertEqual(kinds(v), ["broker epoch went back", "controller epoch went back"])

    def test_route_back_to_an_older_master(self):
        history = [sync(1, 1, A), route(1.1, "ns0", A, B), sync(2, 2, B), route(2.1, "ns0", B, A),
                   route(3, "ns0", A, B)]
        v = []
        check.check_routes_back(history, v)
        self.assertEqual(kinds(v), ["route went back to an older master"])
        v = []
        check.check_routes_back(history[:4], v)
        self.assertEqual(v, [])
        # the route names the new master a moment before the controller's next sample does
        v = []
        check.check_routes_back(history[:4] + [route(3, "ns0", A, B), sync(3.2, 3, A)], v)
        self.assertEqual(v, [])

    def test_convergence(self):
        history = [sync(1, 2, B), route(1, "ns0", A, B), route(1, "ns1", B, A), route(4, "ns0", B, A)]
        self.assertEqual(check.converged_at(history, 0, ["ns0", "ns1"]), 4)
        self.assertIsNone(check.converged_at(history[:3], 0, ["ns0", "ns1"]))

    def test_lost_outside_a_deposed_window_is_a_violation(self):
        sends = [{"i": 0, "ok": True, "ms": 10_000, "rest": "g 0 1 x"},
                 {"i": 1, "ok": True, "ms": 20_000, "rest": "g 0 2 x"},
                 {"i": 2, "ok": False, "ms": 21_000, "rest": "timeout"}]
        v = []
        m = check.check_lost(sends, {}, v, [("g", 9.0, 12.0, "master-ctl-cut")], 0.0)
        self.assertEqual((m["lost"], m["lost_to_deposed_master"]), (2, 1))
        self.assertEqual([x["key"] for x in v], ["c-1"])

    def test_deposed_window_lasts_until_the_old_master_knows(self):
        history = [sync(1, 1, A), {"t": 1, "k": "broker", "b": "g-0", "id": 0, "epoch": 1},
                   sync(5, 2, B), {"t": 6, "k": "broker", "b": "g-0", "id": 0, "epoch": 1},
                   {"t": 9, "k": "broker", "b": "g-0", "id": 2, "epoch": 2}]
        changes = check.check_epochs(history, [])
        windows = check.deposed_windows(history, [], changes, {"g-0": A.split(":")[0], "g-1": B.split(":")[0]})
        self.assertEqual(windows, [("g", 4.0, 10.0, "before the first fault")])

    def test_kv(self):
        puts = [{"t": 1, "k": "kv_put", "ns": "ns0", "key": "k", "value": "v1", "ok": True},
                {"t": 2, "k": "kv_put", "ns": "ns1", "key": "k", "value": "v2", "ok": False}]
        for final, bad in (("v1", False), ("v2", False), ("v0", True)):
            v = []
            check.check_kv(puts + [{"t": 3, "k": "kv", "ns": "ns0", "table": {"k": final}},
                                   {"t": 3, "k": "kv_round", "after": "f", "same": True}], v)
            self.assertEqual(bool(v), bad, final)
        v = []
        check.check_kv([{"t": 3, "k": "kv_round", "after": "f", "same": False}], v)
        self.assertEqual(kinds(v), ["KV differs between NameServers after a heal"])

    def test_kv_unacknowledged_put_may_land_late(self):
        # A put sent to a frozen NameServer times out; the NameServer wakes after a later put was
        # acknowledged elsewhere and takes it: the read may find either (CI run of stop 32).
        def put(t0, t, value, ok):
            return {"t0": t0, "t": t, "k": "kv_put", "ns": "ns0", "key": "k", "value": value, "ok": ok}

        def read(value):
            return {"t0": 57.5, "t": 57.6, "k": "kv", "ns": "ns0", "table": {"k": value}}

        late = [put(47, 48, "v48", False), put(54, 54.1, "v55", True)]
        for final, bad in (("v48", False), ("v55", False), (None, True)):
            v = []
            check.check_kv(late + [read(final)], v)
            self.assertEqual(bool(v), bad, final)
        # Acknowledged before the later one was sent: overwritten, never readable again.
        v = []
        check.check_kv([put(47, 48, "v48", True), put(54, 54.1, "v55", True), read("v48")], v)
        self.assertEqual(kinds(v), ["KV lost an acknowledged write"])
        # Two acknowledged puts in flight together: either may be the last.
        for final in ("v1", "v2"):
            v = []
            check.check_kv([put(1, 3, "v1", True), put(2, 2.5, "v2", True), read(final)], v)
            self.assertEqual(v, [], final)


if __name__ == "__main__":
    unittest.main()
