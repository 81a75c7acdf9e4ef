#!/usr/bin/env python3
"""Checks the queries of contrib/ against the metrics rmq-namesrv exports (run by contrib/check.sh).

Every `rmq_namesrv_*` name in the Grafana dashboard (panel and variable queries) and in the
Prometheus alert rules must be a series the server exports, and every label a query selects or
groups by must be one of those series' labels. The exported names come from:

  --metrics-file FILE  docs/metrics.md (its metrics table; the default), a Prometheus/OpenMetrics
                       text scrape saved to a file, or a plain list of names, one a line;
  --metrics-url URL    a live scrape, e.g. http://127.0.0.1:8080/metrics.

The dashboard is also checked for shape (panel ids, data source, variables), and with --promtool
its queries are parsed by `promtool check rules` (Grafana variables replaced by sample values).
Standard library only; PyYAML is used when installed. Exit status: 0 all good, 1 a check failed,
2 usage or an unreadable input.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

PREFIX = "rmq_namesrv_"
NAME_RE = re.compile(r"\brmq_namesrv_[a-z0-9_]*[a-z0-9]")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Labels every scraped series has, or that PromQL makes (le of histogram buckets).
TARGET_LABELS = {"job", "instance"}
DS_VARIABLE = "${DS_PROMETHEUS}"


class Exported:
    """The series names a query may use, with their label names (None: unknown)."""

    def __init__(self, source):
        self.source = source
        self.labels = {}  # series name -> set of label names, or None when unknown
        self.histograms = set()  # histogram family names (no series of their own)

    def add(self, name, labels):
        known = self.labels.get(name)
        if labels is None:
            self.labels.setdefault(name, None)
        elif known is None:
            self.labels[name] = set(labels)
        else:
            known.update(labels)

    def add_family(self, name, kind, labels):
        if kind == "histogram":
            self.histograms.add(name)
            for suffix in HISTOGRAM_SUFFIXES:
                series_labels = labels
                if labels is not None and suffix == "_bucket":
                    series_labels = set(labels) | {"le"}
                self.add(name + suffix, series_labels)
        elif kind == "counter" and not name.endswith("_total"):
            self.add(name + "_total", labels)
        else:
            self.add(name, labels)


def from_markdown(text, source):
    """The metrics table of docs/metrics.md: | `name` | type | `label`, ... | meaning |."""
    exported = Exported(source)
    in_table = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and cells[0].lower() == "metric" and cells[1].lower() == "type":
            in_table = True
            continue
        if not in_table:
            continue
        if not cells:
            in_table = False
            continue
        if set(cells[0]) <= set("-: "):
            continue
        names = re.findall(r"`([a-z0-9_]+)`", cells[0])
        kind = cells[1].split()[0].lower() if cells[1] else "untyped"
        # "`kind` = `new`, `refreshed`": the names are before "=", the values after it.
        labels = set(re.findall(r"`([a-z0-9_]+)`", cells[2].split("=")[0]))
        for name in names:
            full = name if name.startswith(PREFIX) else PREFIX + name
            exported.add_family(full, kind, labels)
    if not exported.labels:
        raise ValueError(f"{source}: no metrics table (| Metric | Type | Labels | ... |) found")
    return exported


SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?:[^"\\]|\\.)*"')


def from_exposition(text, source):
    """A Prometheus text or OpenMetrics scrape: # TYPE lines and samples."""
    exported = Exported(source)
    families = {}
    seen_samples = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                families[parts[2]] = parts[3]
            continue
        if not line or line.startswith("#"):
            continue
        match = SAMPLE_RE.match(line)
        if not match:
            continue
        name = match.group(1)
        if name.endswith("_created"):
            continue
        labels = {m.group(1) for m in LABEL_RE.finditer(match.group(3) or "")}
        exported.add(name, labels)
        seen_samples.add(name)
    for family, kind in families.items():
        if kind == "histogram":
            exported.histograms.add(family)
        # A family without samples (a labelled metric nothing has touched yet) is still exported.
        series = {
            "histogram": [family + s for s in HISTOGRAM_SUFFIXES],
            "summary": [family, family + "_sum", family + "_count"],
            "counter": [family if family.endswith("_total") else family + "_total"],
            "info": [family if family.endswith("_info") else family + "_info"],
        }.get(kind, [family])
        for name in series:
            if name not in seen_samples:
                exported.add(name, None)
    ours = [n for n in exported.labels if n.startswith(PREFIX)]
    if not ours:
        raise ValueError(f"{source}: no {PREFIX}* metric in it")
    return exported


def from_list(text, source):
    exported = Exported(source)
    for line in text.splitlines():
        name = line.split("#")[0].strip()
        if name:
            exported.add(name, None)
    if not exported.labels:
        raise ValueError(f"{source}: empty list of metric names")
    return exported


def load_exported(args):
    if args.metrics_url:
        try:
            with urllib.request.urlopen(args.metrics_url, timeout=args.timeout) as response:
                text = response.read().decode("utf-8")
        except Exception as err:  # noqa: BLE001 - any failure to scrape is reported the same way
            raise ValueError(f"cannot scrape {args.metrics_url}: {err}") from err
        return from_exposition(text, args.metrics_url)
    path = args.metrics_file
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".md"):
        return from_markdown(text, path)
    if re.search(r"^# (TYPE|HELP) ", text, re.M) or re.search(r"^\w+\{", text, re.M):
        return from_exposition(text, path)
    return from_list(text, path)


# ---------------------------------------------------------------------------------------------
# Queries


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)


def check_expr(expr, where, exported, problems):
    """Names and labels of one PromQL expression (or a Grafana label_values(...) query)."""
    bare = strip_strings(expr)
    names = set(NAME_RE.findall(bare))
    for name in sorted(names):
        if name in exported.labels:
            continue
        hint = ""
        if name in exported.histograms:
            hint = " (a histogram: use its _bucket, _sum or _count series)"
        else:
            for suffix in HISTOGRAM_SUFFIXES:
                if name.endswith(suffix) and name[: -len(suffix)] + "_bucket" not in exported.labels:
                    hint = f" ({name[: -len(suffix)]} is not an exported histogram)"
        problems.append(f"{where}: metric {name} is not exported by the server{hint} [{exported.source}]")
    if any(name not in exported.labels for name in names):
        return  # reported above; its labels are unknown
    known = [exported.labels[name] for name in names]
    if any(labels is None for labels in known):
        return  # some label sets are unknown (a family without samples): nothing to compare
    available = set(TARGET_LABELS)
    for labels in known:
        available |= labels
    # Selectors: name{label="...", ...}
    for match in re.finditer(r"\b(rmq_namesrv_[a-z0-9_]+)\s*\{([^}]*)\}", expr):
        name = match.group(1)
        labels = exported.labels.get(name)
        if labels is None:
            continue
        for label in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", strip_strings(match.group(2))):
            if label not in labels and label not in TARGET_LABELS and label != "__name__":
                problems.append(f"{where}: {name} has no label {label!r} (it has {sorted(labels)})")
    if not names:
        return
    # Grouping and matching clauses, and label_values(..., label).
    for match in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", bare):
        for label in re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", match.group(1)):
            if label not in available:
                problems.append(f"{where}: label {label!r} is on none of {sorted(names)}")
    for match in re.finditer(r"label_values\s*\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)", bare):
        if match.group(2) not in available:
            problems.append(f"{where}: label_values asks for {match.group(2)!r}, on none of {sorted(names)}")


def grafana_to_promql(expr):
    """A Grafana query as plain PromQL, for promtool to parse."""
    expr = re.sub(r"label_values\s*\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)", r"\1", expr)
    expr = re.sub(r"^\s*label_values\s*\(\s*\)\s*$", "up", expr)

    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        return "5m" if name.startswith("__") and name != "__name__" else "x"

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]", value, expr)


def dashboard_queries(dashboard, problems):
    """(where, expr) of every panel target and query variable; shape problems on the way."""
    queries = []
    templating = dashboard.get("templating", {}).get("list", [])
    variables = {v.get("name"): v for v in templating}
    ds = variables.get("DS_PROMETHEUS") or {}
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("dashboard: no Prometheus data source variable DS_PROMETHEUS")
    cluster = variables.get("cluster")
    if cluster is None:
        problems.append("dashboard: no 'cluster' variable")
    for var in templating:
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        where = f"dashboard variable {var.get('name')!r}"
        if not query:
            problems.append(f"{where}: empty query")
            continue
        if (var.get("datasource") or {}).get("uid") != DS_VARIABLE:
            problems.append(f"{where}: data source is not {DS_VARIABLE}")
        queries.append((where, query))
    if cluster is not None:
        query = cluster.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query or ""
        if not re.search(r"label_values\(\s*rmq_namesrv_live_brokers\b.*,\s*cluster\s*\)", query):
            problems.append("dashboard variable 'cluster': not label_values(rmq_namesrv_live_brokers, cluster)")

    ids = {}

    def walk(panels):
        for panel in panels:
            pid = panel.get("id")
            title = panel.get("title", "?")
            where = f"dashboard panel {pid} {title!r}"
            if pid in ids:
                problems.append(f"{where}: id {pid} also used by {ids[pid]!r}")
            ids[pid] = title
            grid = panel.get("gridPos") or {}
            if not all(isinstance(grid.get(k), int) for k in ("x", "y", "w", "h")) or grid["x"] + grid["w"] > 24:
                problems.append(f"{where}: bad gridPos {grid}")
            if panel.get("type") == "row":
                walk(panel.get("panels", []))
                continue
            if (panel.get("datasource") or {}).get("uid") != DS_VARIABLE:
                problems.append(f"{where}: data source is not {DS_VARIABLE}")
            targets = panel.get("targets") or []
            if not targets:
                problems.append(f"{where}: no query")
            for target in targets:
                expr = target.get("expr", "")
                if not expr.strip():
                    problems.append(f"{where} target {target.get('refId')}: empty expr")
                    continue
                if (target.get("datasource") or {}).get("uid", DS_VARIABLE) != DS_VARIABLE:
                    problems.append(f"{where} target {target.get('refId')}: data source is not {DS_VARIABLE}")
                queries.append((f"{where} target {target.get('refId')}", expr))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    return queries


def rule_exprs(path):
    """(where, expr) of every rule of a Prometheus rule file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        import yaml  # noqa: PLC0415 - optional
    except ImportError:
        return list(rule_exprs_plain(text, path))
    doc = yaml.safe_load(text) or {}
    out = []
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            name = rule.get("alert") or rule.get("record")
            out.append((f"{path} rule {name}", str(rule.get("expr", ""))))
    return out


def rule_exprs_plain(text, path):
    """Without PyYAML: `- alert: X` / `- record: X` then `expr: ...` inline or as a block."""
    name = "?"
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = re.match(r"\s*-?\s*(alert|record):\s*(\S+)", line)
        if match:
            name = match.group(2)
        match = re.match(r"(\s*)expr:\s*(.*)$", line)
        if match:
            indent, value = len(match.group(1)), match.group(2).strip()
            if value and value[0] not in "|>":
                yield f"{path} rule {name}", value.strip("'\"")
            else:
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                yield f"{path} rule {name}", " ".join(block)
                continue
        i += 1


def promtool_parse(queries, promtool, problems):
    """promtool parses each dashboard query as a recording rule's expression."""
    rules = ["groups:", "  - name: dashboard", "    rules:"]
    for n, (_, expr) in enumerate(queries):
        rules.append(f"      - record: dashboard:query_{n}")
        rules.append(f"        expr: {json.dumps(grafana_to_promql(expr))}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("\n".join(rules) + "\n")
        path = f.name
    try:
        result = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if result.returncode != 0:
        detail = (result.stdout + result.stderr).strip()
        for n, (where, expr) in enumerate(queries):
            if f"dashboard:query_{n}\"" in detail or f"query_{n}:" in detail or f"query_{n} " in detail:
                detail += f"\n  query_{n} is {where}: {expr}"
        problems.append(f"dashboard: promtool cannot parse its queries:\n{detail}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--metrics-file", default=os.path.join(root, "docs", "metrics.md"),
                        help="docs/metrics.md (default), a saved scrape, or a list of names")
    source.add_argument("--metrics-url", help="scrape this URL for the exported names")
    parser.add_argument("--timeout", type=float, default=5.0, help="scrape timeout, seconds")
    parser.add_argument("--dashboard", default=os.path.join(root, "contrib", "grafana", "rmq-namesrv.json"))
    parser.add_argument("--rules", default=os.path.join(root, "contrib", "prometheus", "alerts.yml"))
    parser.add_argument("--promtool", help="parse the dashboard queries with this promtool")
    args = parser.parse_args()

    try:
        exported = load_exported(args)
    except (OSError, ValueError) as err:
        print(f"check_queries: {err}", file=sys.stderr)
        return 2
    problems = []
    try:
        with open(args.dashboard, encoding="utf-8") as f:
            dashboard = json.load(f)
    except (OSError, ValueError) as err:
        print(f"check_queries: {args.dashboard}: not valid JSON: {err}", file=sys.stderr)
        return 2
    queries = dashboard_queries(dashboard, problems)
    for where, expr in queries:
        check_expr(expr, f"{args.dashboard}: {where}", exported, problems)
    if args.promtool and queries:
        promtool_parse([(w, e) for w, e in queries], args.promtool, problems)
    try:
        rules = rule_exprs(args.rules)
    except OSError as err:
        print(f"check_queries: {err}", file=sys.stderr)
        return 2
    if not rules:
        problems.append(f"{args.rules}: no rules found")
    for where, expr in rules:
        check_expr(expr, where, exported, problems)

    used = set()
    for _, expr in queries:
        used |= set(NAME_RE.findall(strip_strings(expr)))
    ours = {n for n in exported.labels if n.startswith(PREFIX)}
    unused = sorted(n for n in ours - used if not (n.endswith(("_sum", "_count")) and n[: n.rfind("_")] in exported.histograms))
    if problems:
        print(f"check_queries: {len(problems)} problem(s):", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print(f"check_queries: {len(queries)} dashboard queries and {len(rules)} rules use only the "
          f"{len(ours)} series exported by the server ({exported.source})")
    if unused:
        print(f"check_queries: note: not on the dashboard: {', '.join(unused)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
