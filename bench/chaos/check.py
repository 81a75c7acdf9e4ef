#!/usr/bin/env python3
"""The checker of a chaos run: reads the run's history (history.jsonl, the producer's log
sender/stdout.log, the consumer's consumed.tsv) and judges:

1. lost: every acknowledged send (SEND i OK) read by the consumer after the run;
2. one master per epoch: per group, no two brokers master at one epoch, whether the controller
   says so (1006 samples) or the brokers themselves (1007: broker id 0 at its newest epoch);
3. no epoch going back: the controller's master epoch per group, each broker's own newest epoch,
   and every NameServer's route (its id 0 mapped to the newest epoch at which the controller had
   made that broker master, so far) never decrease;
4. convergence: after each heal, every NameServer's route names the controller's master as id 0
   within CONVERGE bound (and both members);
5. KV: after each heal the KV namespace is the same on every NameServer, and the last value of
   each key is the last acknowledged write or a later one;
6. no process crashed (exited while not stopped by the harness).

    bench/chaos/check.py <workdir>     # judge a kept run again
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

SEND_FIELDS = 4


def load(workdir):
    workdir = Path(workdir)
    history = [json.loads(line) for line in (workdir / "history.jsonl").read_text().splitlines() if line.strip()]
    sends = []
    for line in (workdir / "sender" / "stdout.log").read_text(errors="replace").splitlines():
        parts = line.split(" ", 4)
        if parts[0] == "SEND" and len(parts) >= SEND_FIELDS:
            sends.append({"i": int(parts[1]), "ok": parts[2] == "OK", "ms": int(parts[3]),
                          "rest": parts[4] if len(parts) > 4 else ""})
    consumed = defaultdict(set)
    dump = workdir / "consumed.tsv"
    if dump.exists():
        for line in dump.read_text(errors="replace").splitlines():
            cols = line.split("\t")
            if cols and cols[0].startswith("c-"):
                consumed[int(cols[0][2:])].add(tuple(cols[1:3]))
    return history, sends, consumed


# A deposed master that still takes writes: the 5.5.0 broker's AutoSwitchHAService.removeConnection
# shrinks its own SyncStateSet to itself as soon as the in-sync slave's HA connection closes (the
# slave closes it when the controller makes it master), without the controller's approval, so the
# cut-off old master then acknowledges alone (allAckInSyncStateSet counts a set of one) until it
# learns of the new epoch; those messages are truncated when it rejoins as a slave. See README.md.
DEPOSED_SLACK_S = 1.0


def deposed_windows(history, records, changes, nodes):
    """[(group, from, to, fault)]: for each time the controller moved a group's master away from
    broker X, from that change (minus the sampling slack) until X itself reports that it is no
    longer master at its old epoch (its 1007 answer: another id, or a newer epoch), plus the
    slack. Inside such a window X is a deposed master that may still take writes."""
    broker_of = {f"{addr}:10911": name for name, addr in nodes.items()}
    reports = defaultdict(list)
    for e in history:
        if e["k"] == "broker" and "id" in e:
            reports[e["b"]].append(e)
    out = []
    for group, seq in changes.items():
        previous = None
        for t, epoch, master in seq:
            if previous and master != previous and broker_of.get(previous):
                old = broker_of[previous]
                learned = next((r["t"] for r in reports[old] if r["t"] > t and (r["id"] != 0 or r["epoch"] >= epoch)),
                               float("inf"))
                fault = next((r["name"] for r in reversed(records) if r["start"] <= t), "before the first fault")
                out.append((group, t - DEPOSED_SLACK_S, learned + DEPOSED_SLACK_S, fault))
            if master:
                previous = master
    return out


def check_lost(sends, consumed, violations, windows, wall):
    """Rule 1. A lost message acknowledged by a group inside one of its deposed-master windows
    is the broker's (counted apart, printed); any other is a violation."""
    acked = {s["i"]: s for s in sends if s["ok"]}
    lost = sorted(i for i in acked if i not in consumed)
    broker_lost = []
    for i in lost:
        s = acked[i]
        t = s["ms"] / 1000.0 - wall
        group = s["rest"].split(" ", 1)[0]
        inside = [w for w in windows if w[0] == group and w[1] <= t <= w[2]]
        if inside:
            broker_lost.append({"key": f"c-{i}", "t": round(t, 3), "group": group, "fault": inside[0][3]})
        elif len([v for v in violations if v["kind"] == "lost"]) < 20:
            violations.append({"kind": "lost", "key": f"c-{i}", "t": round(t, 3),
                               "ops": [x for x in sends if x["i"] == i]})
    return {"sent_keys": len({s["i"] for s in sends}), "acked": len(acked),
            "failed_attempts": sum(1 for s in sends if not s["ok"]), "read": len(consumed), "lost": len(lost),
            "lost_to_deposed_master": len(broker_lost), "deposed_examples": broker_lost[:3] + broker_lost[-1:],
            "stored_unacked": len([i for i in consumed if i not in acked]),
            "duplicated": len([i for i, locs in consumed.items() if len(locs) > 1])}


def check_epochs(history, violations):
    """Rules 2 and 3. Returns {group: [(t, epoch, master)]} (the controller's master changes)."""
    masters = defaultdict(dict)       # group -> epoch -> (master, first entry)
    changes = defaultdict(list)
    last_epoch = {}
    broker_last = {}
    broker_master_at = defaultdict(dict)  # group -> epoch -> (broker, entry)
    group_of = {}
    for e in history:
        if e["k"] == "sync" and "groups" in e:
            for g, info in e["groups"].items():
                epoch, master = info.get("epoch"), info.get("master")
                if epoch is None:
                    continue
                if master and epoch in masters[g] and masters[g][epoch][0] != master:
                    violations.append({"kind": "two masters, one epoch (controller)", "group": g, "epoch": epoch,
                                       "ops": [masters[g][epoch][1], e]})
                if master and epoch not in masters[g]:
                    masters[g][epoch] = (master, e)
                if g in last_epoch and epoch < last_epoch[g][0]:
                    violations.append({"kind": "controller epoch went back", "group": g, "ops": [last_epoch[g][1], e]})
                if not changes[g] or changes[g][-1][1:] != (epoch, master):
                    changes[g].append((e["t"], epoch, master))
                last_epoch[g] = (epoch, e)
        elif e["k"] == "broker" and "id" in e:
            b = e["b"]
            group_of[b] = b.rsplit("-", 1)[0]
            if b in broker_last and e["epoch"] < broker_last[b]["epoch"]:
                violations.append({"kind": "broker epoch went back", "broker": b, "ops": [broker_last[b], e]})
            broker_last[b] = e
            if e["id"] == 0 and e["epoch"]:
                seen = broker_master_at[group_of[b]].get(e["epoch"])
                if seen and seen[0] != b:
                    violations.append({"kind": "two masters, one epoch (brokers)", "group": group_of[b],
                                       "epoch": e["epoch"], "ops": [seen[1], e]})
                elif not seen:
                    broker_master_at[group_of[b]][e["epoch"]] = (b, e)
    return changes


ROUTE_SLACK_S = 1.0


def check_routes_back(history, violations):
    """Rule 3 on the NameServers' routes. A route may show a new master before the next 1006
    sample does (they are polled apart): a master's epoch is the newest the controller made it
    master at up to ROUTE_SLACK_S after the route sample."""
    made = defaultdict(list)  # group -> [(t, master, epoch)]
    for e in history:
        if e["k"] == "sync" and "groups" in e:
            for g, info in e["groups"].items():
                if info.get("master") and info.get("epoch") is not None:
                    made[g].append((e["t"], info["master"], info["epoch"]))
    per_ns = {}
    for e in history:
        if e["k"] != "route" or "route" not in e:
            continue
        for g, addrs in e["route"].items():
            master = addrs.get("0")
            epochs = [ep for t, m, ep in made.get(g, []) if m == master and t <= e["t"] + ROUTE_SLACK_S]
            if not master or not epochs:
                continue
            epoch = max(epochs)
            key = (e["ns"], g)
            prev = per_ns.get(key)
            if prev and epoch < prev[0] and master != prev[1]["route"][g].get("0"):
                violations.append({"kind": "route went back to an older master", "ns": e["ns"], "group": g,
                                   "ops": [prev[1], e], "epochs": [prev[0], epoch]})
            per_ns[key] = (epoch, e)


def converged_at(history, since, namesrvs):
    """The first time at or after `since` when every NameServer's latest route names, for each
    group, the controller's latest master as id 0 with both members."""
    routes, sync = {}, None
    for e in history:
        if e["k"] == "route":
            routes[e["ns"]] = e.get("route")
        elif e["k"] == "sync" and "groups" in e:
            sync = e["groups"]
        else:
            continue
        if e["t"] < since or sync is None or set(routes) != set(namesrvs):
            continue
        if all(r and all((r.get(g) or {}).get("0") == info.get("master") and len(r.get(g) or {}) == 2
                         for g, info in sync.items()) for r in routes.values()):
            return e["t"]
    return None


def fault_effects(history, records, changes, namesrvs, bound, violations):
    """Per fault: the time to a new master of the group it targets and to a new controller
    leader (each counted only before the next fault starts), and the time from its heal until
    every NameServer's route converged."""
    effects = []
    leaders = [e for e in history if e["k"] == "meta" and e.get("is_leader")]
    for n, r in enumerate(records):
        until = records[n + 1]["start"] if n + 1 < len(records) else float("inf")
        eff = {"fault": r["name"], "detail": r["detail"], "start": r["start"], "heal": r["heal"]}
        group = r["detail"].get("group")
        if group:
            before = [c for c in changes[group] if c[0] <= r["start"]]
            after = [c for c in changes[group]
                     if r["start"] < c[0] < until and before and c[2] and c[2] != before[-1][2]]
            eff["new_master_s"] = round(after[0][0] - r["start"], 2) if after else None
        before = [e for e in leaders if e["t"] <= r["start"]]
        moved = [e for e in leaders if r["start"] < e["t"] < until and before and e["ns"] != before[-1]["ns"]]
        eff["new_leader_s"] = round(moved[0]["t"] - r["start"], 2) if moved else None
        puts = [e for e in history if e["k"] == "kv_put" and r["start"] <= e["t"] < min(until, r["heal"] + 15)]
        eff["kv_refused"] = f"{sum(1 for e in puts if not e['ok'])}/{len(puts)}" if puts else None
        conv = converged_at(history, r["heal"], namesrvs)
        eff["converge_s"] = round(conv - r["heal"], 2) if conv is not None else None
        if conv is None or conv - r["heal"] > bound:
            violations.append({"kind": "routes did not converge within the bound", "fault": r["name"],
                               "bound_s": bound, "converge_s": eff["converge_s"]})
        effects.append(eff)
    return effects


def sent(op):
    """When an operation was sent (histories before `t0` was recorded: when it ended)."""
    return op.get("t0", op["t"])


def readable(puts, read_sent):
    """The values a read sent at `read_sent` may find for one key, given the puts of that key sent
    before it ended: the value of a put P unless an acknowledged put Q was sent after P ended and
    answered before the read was sent (P < Q < read). A put that was not acknowledged (refused,
    timed out, its connection lost) never ended for this rule: it may have been applied at any
    time after it was sent, as when a NameServer frozen by SIGSTOP wakes and takes a request that
    waited in its socket while its client gave up. No value (None) is readable while no
    acknowledged put was answered before the read."""
    acked = [q for q in puts if q["ok"] and q["t"] <= read_sent]
    allowed = {None} if not acked else set()
    for p in puts:
        ended = p["t"] if p["ok"] else float("inf")
        if not any(sent(q) > ended for q in acked):
            allowed.add(p["value"])
    return allowed


def check_kv(history, violations):
    rounds = [e for e in history if e["k"] == "kv_round"]
    for e in rounds:
        if not e["same"]:
            tables = [x for x in history if x["k"] == "kv" and x["t"] <= e["t"]][-4:]
            violations.append({"kind": "KV differs between NameServers after a heal", "after": e["after"],
                               "ops": tables})
    puts = [e for e in history if e["k"] == "kv_put"]
    finals = {}
    for e in history:
        if e["k"] == "kv" and e.get("table") is not None:
            finals[e["ns"]] = e
    for ns, final in finals.items():
        for key in {p["key"] for p in puts if sent(p) <= final["t"]}:
            mine = [p for p in puts if p["key"] == key and sent(p) <= final["t"]]
            allowed = readable(mine, sent(final))
            if final["table"].get(key) not in allowed:
                acked = [p for p in mine if p["ok"] and p["t"] <= sent(final)]
                violations.append({"kind": "KV lost an acknowledged write", "ns": ns, "key": key,
                                   "ops": [acked[-1] if acked else None, final]})
    return {"puts": len(puts), "acked": sum(1 for p in puts if p["ok"]), "rounds": len(rounds)}


def check_run(workdir, records, bound=None):
    history, sends, consumed = load(workdir)
    run = next(e for e in history if e["k"] == "run")
    bound = bound or run["converge_bound_s"]
    namesrvs = sorted({e["ns"] for e in history if e["k"] == "route"})
    violations = []
    changes = check_epochs(history, violations)
    messages = check_lost(sends, consumed, violations, deposed_windows(history, records, changes, run["nodes"]), run["wall"])
    check_routes_back(history, violations)
    effects = fault_effects(history, records, changes, namesrvs, bound, violations)
    kv = check_kv(history, violations)
    for e in history:
        if e["k"] == "crash":
            violations.append({"kind": "process crashed", "ops": [e]})
    return {"seed": run["seed"], "netem": run["netem"], "bound_s": bound, "messages": messages, "kv": kv,
            "effects": effects, "observations": len(history),
            "master_changes": {g: c for g, c in changes.items()}, "violations": violations}


def print_report(report):
    print(f"# seed {report['seed']}; delay (netem) {'on' if report['netem'] else 'not available: loss only'}")
    for eff in report["effects"]:
        print(f"# fault {eff['fault']:18} at {eff['start']:7.1f} s, healed {eff['heal']:7.1f} s: new master "
              f"{_s(eff.get('new_master_s'))}, new leader {_s(eff.get('new_leader_s'))}, routes converged "
              f"{_s(eff['converge_s'])} after the heal, KV writes refused {eff.get('kv_refused') or '-'}  "
              f"{json.dumps(eff['detail'])}")
    m = report["messages"]
    print(f"# messages: {m['sent_keys']} keys, {m['acked']} acknowledged, {m['failed_attempts']} failed attempts; "
          f"read {m['read']}: lost {m['lost']} ({m['lost_to_deposed_master']} acknowledged by a deposed master before it "
          f"learned it was replaced: the 5.5.0 broker's, see README), duplicated {m['duplicated']}, stored unacknowledged "
          f"{m['stored_unacked']}")
    for ex in m["deposed_examples"]:
        print(f"#   lost to a deposed master: {json.dumps(ex)}")
    print(f"# KV: {report['kv']['puts']} writes ({report['kv']['acked']} acknowledged), {report['kv']['rounds']} "
          f"comparisons; {report['observations']} observations recorded")
    for v in report["violations"]:
        print(f"VIOLATION {json.dumps(v)[:2000]}")
    print(f"# {len(report['violations'])} violation(s); run {report.get('run_seconds', '?')} s")


def _s(x):
    return f"{x:.1f} s" if isinstance(x, (int, float)) else "-"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    wd = Path(sys.argv[1])
    hist = [json.loads(x) for x in (wd / "history.jsonl").read_text().splitlines() if x.strip()]
    starts = [e for e in hist if e["k"] == "fault" and e["phase"] == "start"]
    heals = [e for e in hist if e["k"] == "fault" and e["phase"] == "heal"]
    recs = [{"name": s["name"], "detail": s["detail"], "start": s["t"], "heal": h["t"], "hold": s["hold"]}
            for s, h in zip(starts, heals)]
    rep = check_run(wd, recs)
    print_report(rep)
    sys.exit(1 if rep["violations"] else 0)
