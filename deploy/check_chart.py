#!/usr/bin/env python3
"""Checks a rendered chart against the server it deploys (run by deploy/check.sh).

    check_chart.py --facts RENDERED.json [--binary target/release/rmq-namesrv]

RENDERED.json is what deploy/k8scheck -facts wrote: the chart's objects, decoded strictly. The
server's side comes from this repository, so that a changed default, port or path fails here
rather than in a cluster:
  - the effective configuration of a pod: `rmq-namesrv --print-config --config <the ConfigMap's
    config.toml>` with the pod's NAMESRV__* environment (with --binary), else config.toml (every
    default) with the rendered file and that environment laid over it;
  - the HTTP paths the server routes (src/http/mod.rs), its health-query timeout
    (src/server/handle.rs), the HTTP port's stop (src/http/mod.rs), the suggested HTTP port and
    the controller port of config.toml's examples;
  - deploy/Containerfile: the entrypoint's --config path, HOME, the user.
Checked: container ports = the listen addresses of the configuration; probe paths, ports and
scheme (tls.mode); metrics annotations and ServiceMonitor; terminationGracePeriodSeconds > the
preStop sleep + the drain + shutdown_grace + the HTTP stop; the chart's copy of the server's
defaults; data, TLS and ACL paths inside the right mounts; the security context; the headless
Service and the address-server setting. Exit 0 when all hold, 1 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(ROOT, "deploy", "helm", "rmq-namesrv")
# Keys the chart sets that a server binary may not know yet: they are being added in parallel.
# A binary that refuses one of these is asked again without it, and the check says so.
def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def seconds(text):
    """A humantime duration ("30s", "1m30s", "500ms") in seconds."""
    units = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    parts = re.findall(r"(\d+)\s*(ms|sec|min|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        raise ValueError(f"duration {text!r} not understood")
    return sum(int(n) * units[u] for n, u in parts)


def port_of(listen):
    m = re.fullmatch(r"(\[[^\]]*\]|[^:\[\]]*):(\d+)", listen or "")
    return int(m.group(2)) if m else None


def deep_merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def set_key(config, dotted, value):
    section = config
    parts = dotted.split(".")
    for p in parts[:-1]:
        section = section.setdefault(p, {})
    section[parts[-1]] = value


class Server:
    """What the repository says about the server."""

    def __init__(self):
        self.defaults = tomllib.loads(read("config.toml"))
        http_rs = read("src", "http", "mod.rs")
        self.routes = set(re.findall(r'\.route\("(/[^"{]*)', http_rs))
        m = re.search(r"const HTTP_SHUTDOWN: Duration = Duration::from_secs\((\d+)\)", http_rs)
        self.http_shutdown = int(m.group(1)) if m else None
        m = re.search(r"const HEALTH_TIMEOUT: Duration = Duration::from_secs\((\d+)\)",
                      read("src", "server", "handle.rs"))
        self.health_timeout = int(m.group(1)) if m else None
        toml_text = read("config.toml")
        m = re.search(r'^\[http\][^\[]*?E\.g\. "[^"]*:(\d+)"', toml_text, re.S | re.M)
        self.suggested_http_port = int(m.group(1)) if m else None
        m = re.search(r'^peers = "".*?"n0-[^:]+:(\d+)', toml_text, re.M)
        self.controller_port = int(m.group(1)) if m else None


class Pod:
    """The StatefulSet's container and what the pod gives it."""

    def __init__(self, objects):
        by_kind = {}
        for o in objects:
            by_kind.setdefault(o["kind"], []).append(o)
        self.by_kind = by_kind
        (self.sts,) = by_kind["StatefulSet"]
        spec = self.sts["spec"]["template"]["spec"]
        self.pod_spec = spec
        (self.container,) = spec["containers"]
        self.ports = {p["name"]: p["containerPort"] for p in self.container.get("ports", [])}
        self.mounts = self.container.get("volumeMounts", [])
        self.volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for claim in self.sts["spec"].get("volumeClaimTemplates", []):
            self.volumes[claim["metadata"]["name"]] = {"name": claim["metadata"]["name"], "claim": True}
        self.env = self.resolve_env()
        (self.configmap,) = by_kind["ConfigMap"]
        self.config_text = self.configmap["data"]["config.toml"]

    def resolve_env(self):
        """The container's environment as the kubelet builds it ($(VAR) expanded), with a pod
        IP and index of the form the downward API gives."""
        env = {}
        items = self.container.get("env", [])
        ipv6 = any("[$(POD_IP)]" in e.get("value", "") for e in items)
        for e in items:
            if "value" in e:
                env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), e["value"])
            else:
                field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                fake = {"status.podIP": "fd00::1" if ipv6 else "10.1.2.3",
                        "metadata.labels['apps.kubernetes.io/pod-index']": "0",
                        "metadata.name": self.sts["metadata"]["name"] + "-0"}
                if field not in fake:
                    raise SystemExit(f"check_chart.py: env {e['name']}: fieldRef {field!r} unknown to this check")
                env[e["name"]] = fake[field]
        return env

    def mount_of(self, path):
        """The volume mount holding path (longest mount path), or None."""
        best = None
        for m in self.mounts:
            mp = m["mountPath"].rstrip("/")
            if path == mp or path.startswith(mp + "/"):
                if best is None or len(mp) > len(best["mountPath"].rstrip("/")):
                    best = m
        return best


def effective_config(pod, server, binary):
    """The pod's configuration as the server would load it."""
    rendered = tomllib.loads(pod.config_text)
    overrides = {k: v for k, v in pod.env.items() if k.startswith("NAMESRV__")}
    if not binary:
        config = deep_merge(server.defaults, rendered)
        for k, v in overrides.items():
            set_key(config, k[len("NAMESRV__"):].lower().replace("__", "."), v)
        return config, rendered, pod.config_text
    text = pod.config_text
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": pod.env.get("HOME", "/nonexistent")}
        env.update(overrides)
        run = subprocess.run([binary, "--config", f.name, "--print-config"], env=env,
                             capture_output=True, text=True, timeout=30)
    finally:
        os.unlink(f.name)
    if run.returncode != 0:
        raise SystemExit(f"check_chart.py: {binary} refuses the rendered config.toml:\n{run.stderr}")
    return tomllib.loads(run.stdout), rendered, text


def check(pod, server, config, rendered, problems):
    fail = problems.append
    c, sts = pod.container, pod.sts
    # Ports: the listen addresses of the configuration.
    remoting = port_of(config["server"]["listen"])
    if pod.ports.get("remoting") != remoting:
        fail(f"container port remoting {pod.ports.get('remoting')} != server.listen {config['server']['listen']}")
    if remoting != port_of(server.defaults["server"]["listen"]):
        fail(f"remoting port {remoting} is not the server's default {server.defaults['server']['listen']}")
    http = port_of(config["http"].get("listen", ""))
    if http is None:
        fail("http.listen is not set: no /health, /ready or /metrics")
    if pod.ports.get("http") != http:
        fail(f"container port http {pod.ports.get('http')} != http.listen {config['http'].get('listen')}")
    if server.suggested_http_port is None or http != server.suggested_http_port:
        fail(f"http port {http} is not the one config.toml suggests ({server.suggested_http_port})")
    ctrl = config.get("controller", {})
    if ctrl.get("enabled"):
        mine = [p for p in ctrl.get("peers", "").split(";") if p.startswith(ctrl.get("self_id", "?") + "-")]
        port = port_of(mine[0].split("-", 1)[1]) if mine else None
        if port is None or pod.ports.get("controller") != port:
            fail(f"container port controller {pod.ports.get('controller')} != this pod's address in "
                 f"controller.peers {ctrl.get('peers')!r} (self_id {ctrl.get('self_id')!r})")
        if port != server.controller_port:
            fail(f"controller port {port} is not config.toml's example port {server.controller_port}")
    elif "controller" in pod.ports:
        fail("a controller port without controller.enabled")
    # Probes: paths the server routes, on the http port, with the scheme tls.mode gives it.
    scheme = "HTTPS" if config.get("tls", {}).get("mode") == "enforcing" else "HTTP"
    for name, path in (("livenessProbe", "/health"), ("readinessProbe", "/ready")):
        get = (c.get(name) or {}).get("httpGet") or {}
        if get.get("path") != path or path not in server.routes:
            fail(f"{name} path {get.get('path')!r}: expected {path}, one of the server's routes {sorted(server.routes)}")
        port = get.get("port")
        if pod.ports.get(port, port) != http:
            fail(f"{name} port {port!r} is not the http port {http}")
        if get.get("scheme", "HTTP") != scheme:
            fail(f"{name} scheme {get.get('scheme', 'HTTP')} but tls.mode {config.get('tls', {}).get('mode')} needs {scheme}")
    if scheme == "HTTPS" and config["tls"].get("need_client_auth") == "require":
        fail("tls.mode enforcing with need_client_auth require: the kubelet's probes cannot present a client certificate")
    timeout = (c.get("livenessProbe") or {}).get("timeoutSeconds", 1)
    if server.health_timeout is None or timeout <= server.health_timeout:
        fail(f"livenessProbe timeoutSeconds {timeout} does not exceed the server's health-query timeout {server.health_timeout} s")
    # Metrics.
    notes = sts["spec"]["template"]["metadata"].get("annotations", {})
    if notes.get("prometheus.io/scrape") == "true":
        if (int(notes.get("prometheus.io/port", 0)), notes.get("prometheus.io/path")) != (http, "/metrics") \
                or "/metrics" not in server.routes:
            fail(f"prometheus.io annotations {notes} do not name /metrics on port {http}")
        if notes.get("prometheus.io/scheme", "http") != scheme.lower():
            fail(f"prometheus.io/scheme {notes.get('prometheus.io/scheme')} but the port speaks {scheme}")
    for sm in pod.by_kind.get("ServiceMonitor", []):
        for ep in sm["spec"]["endpoints"]:
            if ep.get("path") != "/metrics" or ep.get("port") != "http" or ep.get("scheme", "http").lower() != scheme.lower():
                fail(f"ServiceMonitor endpoint {ep} is not /metrics on port http over {scheme}")
    # Stopping.
    srv = config["server"]
    drain = seconds(srv["shutdown_wait"]) if srv.get("shutdown_gracefully") else 0
    pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0)
    need = pre + drain + seconds(srv["shutdown_grace"]) + (server.http_shutdown or 0)
    grace = pod.pod_spec.get("terminationGracePeriodSeconds", 30)
    if server.http_shutdown is None or grace <= need:
        fail(f"terminationGracePeriodSeconds {grace} does not exceed preStop {pre} s + drain {drain:g} s "
             f"+ shutdown_grace {srv['shutdown_grace']} + HTTP stop {server.http_shutdown} s = {need:g} s")
    check_chart_defaults(server, fail)
    check_paths(pod, config, fail)
    check_security(pod, fail)
    check_services(pod, config, rendered, fail)


def check_chart_defaults(server, fail):
    """The chart's copy of the server's defaults (templates/_helpers.tpl) is the server's."""
    helpers = read("deploy", "helm", "rmq-namesrv", "templates", "_helpers.tpl")
    block = re.search(r'define "rmq-namesrv.serverDefaults" -}}\n(.*?)\n{{- end', helpers, re.S)
    if not block:
        fail("templates/_helpers.tpl: no rmq-namesrv.serverDefaults")
        return
    section = None
    for line in block.group(1).splitlines():
        m = re.fullmatch(r"(\w+):", line)
        if m:
            section = m.group(1)
            continue
        key, value = (s.strip() for s in line.split(":", 1))
        real = server.defaults[section][key]
        if str(real).lower() != value.lower():
            fail(f"_helpers.tpl serverDefaults {section}.{key} = {value}, the server's default is {real}")
    m = re.search(r'define "rmq-namesrv.httpShutdownSeconds" -}}(\d+)', helpers)
    if not m or int(m.group(1)) != server.http_shutdown:
        fail(f"_helpers.tpl httpShutdownSeconds is not src/http/mod.rs HTTP_SHUTDOWN ({server.http_shutdown} s)")


def check_paths(pod, config, fail):
    home = pod.env.get("HOME", "")
    expand = lambda p: home + p[1:] if p.startswith("~/") else p
    data = pod.mount_of(expand("~/x"))
    if not home or not data or data["name"] != "data":
        fail(f"HOME {home!r} is not on the data volume")
    writable = [("kv.path", config["kv"]["path"]), ("kv.config_store_path", config["kv"]["config_store_path"]),
                ("controller.store_path", config["controller"]["store_path"])]
    for key, value in (("log.dir", config["log"].get("dir", "")), ("access.audit_log", config["access"].get("audit_log", ""))):
        if value:
            writable.append((key, value))
    for key, value in writable:
        m = pod.mount_of(expand(value))
        if not m or m.get("readOnly") or m["name"] not in ("data", "tmp"):
            fail(f"{key} = {value!r} is not on a writable volume (the root file system is read-only)")
    secret_paths = [("tls." + k, config["tls"].get(k)) for k in ("cert_path", "key_path", "trust_cert_path")]
    secret_paths.append(("access.acl_file", config["access"].get("acl_file")))
    for key, value in secret_paths:
        if not value:
            continue
        m = pod.mount_of(value)
        volume = pod.volumes.get(m["name"]) if m else None
        if not m or "secret" not in (volume or {}) or m.get("subPath"):
            fail(f"{key} = {value!r} is not in a Secret mounted as a directory (the kubelet's ..data swaps need one)")
    # The image's entrypoint reads /etc/rmq-namesrv/config.toml: the ConfigMap is mounted there.
    containerfile = read("deploy", "Containerfile")
    m = re.search(r'^ENTRYPOINT \[(.*)\]', containerfile, re.M)
    args = json.loads("[" + m.group(1) + "]") if m else []
    config_path = args[args.index("--config") + 1] if "--config" in args else None
    mount = pod.mount_of(config_path or "/nonexistent")
    if not mount or pod.volumes.get(mount["name"], {}).get("configMap", {}).get("name") != pod.configmap["metadata"]["name"] \
            or os.path.relpath(config_path, mount["mountPath"]) != "config.toml":
        fail(f"the image's --config {config_path!r} is not the ConfigMap's config.toml")
    m = re.search(r"^ENV HOME=(\S+)", containerfile, re.M)
    if not m or m.group(1) != home:
        fail(f"the image's HOME {m.group(1) if m else None!r} is not the pod's {home!r}")
    m = re.search(r"^USER (\d+):(\d+)", containerfile, re.M)
    ctx = pod.pod_spec.get("securityContext", {})
    if not m or (int(m.group(1)), int(m.group(2))) != (ctx.get("runAsUser"), ctx.get("runAsGroup")):
        fail(f"the image's USER {m.group(0) if m else None!r} is not the pod's runAsUser/runAsGroup")


def check_security(pod, fail):
    pod_ctx = pod.pod_spec.get("securityContext", {})
    ctx = pod.container.get("securityContext", {})
    want = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}
    for key, value in want.items():
        if ctx.get(key, pod_ctx.get(key)) != value:
            fail(f"securityContext.{key} is not {value}")
    if "ALL" not in (ctx.get("capabilities") or {}).get("drop", []):
        fail("securityContext.capabilities.drop lacks ALL")
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    if seccomp != "RuntimeDefault":
        fail(f"seccompProfile {seccomp!r} is not RuntimeDefault")
    if pod.pod_spec.get("automountServiceAccountToken") is not False:
        fail("the pod mounts a service-account token it does not use")


def check_services(pod, config, rendered, fail):
    sts = pod.sts
    services = {s["metadata"]["name"]: s for s in pod.by_kind.get("Service", [])}
    headless = services.get(sts["spec"]["serviceName"], {}).get("spec", {})
    if headless.get("clusterIP") != "None" or not headless.get("publishNotReadyAddresses"):
        fail("the StatefulSet's Service is not headless with publishNotReadyAddresses")
    if not pod.by_kind.get("PodDisruptionBudget"):
        fail("no PodDisruptionBudget")
    http = rendered.get("http", {})
    name, ns = sts["metadata"]["name"], sts["metadata"].get("namespace", "default")
    dns = http.get("nsaddr_dns")
    remoting = pod.ports.get("remoting")
    if dns is not None:
        m = re.fullmatch(rf"{re.escape(sts['spec']['serviceName'])}\.{re.escape(ns)}\.svc\.[a-z0-9.-]+:(\d+)", dns)
        if not m or int(m.group(1)) != remoting:
            fail(f"http.nsaddr_dns {dns!r} is not the headless Service's name and the remoting port")
    else:
        listed = [a for a in config["http"].get("nsaddr", "").split(";") if a]
        want = sts["spec"].get("replicas", 1)
        if len(listed) != want or any(not a.startswith(f"{name}-{i}.{sts['spec']['serviceName']}.{ns}.svc.")
                                      or port_of(a) != remoting for i, a in enumerate(listed)):
            fail(f"http.nsaddr {listed} does not list the {want} pods' stable names")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--facts", required=True)
    ap.add_argument("--binary")
    ap.add_argument("--write-config", metavar="FILE",
                    help="write the ConfigMap's config.toml as checked")
    args = ap.parse_args()
    with open(args.facts, encoding="utf-8") as f:
        objects = json.load(f)
    server, pod = Server(), Pod(objects)
    problems = []
    config, rendered, accepted = effective_config(pod, server, args.binary)
    if args.write_config:
        with open(args.write_config, "w", encoding="utf-8") as f:
            f.write(accepted)
    check(pod, server, config, rendered, problems)
    for p in problems:
        print(f"{args.facts}: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"ports {dict(sorted(pod.ports.items()))}, probes /health and /ready on http, grace "
          f"{pod.pod_spec.get('terminationGracePeriodSeconds')} s, configuration "
          f"{'from ' + os.path.basename(args.binary) + ' --print-config' if args.binary else 'from config.toml + the rendered file'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
