"""Interop scenario of the standalone controller (`rmq-namesrv controller -c controller.properties`,
Java's `mqcontroller`): the controller as a process of its own, beside a NameServer (ours), with
two Java 5.5.0 brokers in controller mode; the failover of controller-failover5 (run.py's
controller_failover) against it. `--namesrv ours` runs our standalone controller; `--namesrv
java` runs Java's (org.apache.rocketmq.controller.ControllerStartup from the 5.5.0 server jars),
which proves the scenario; the NameServer is ours in both. run.py loads this module and calls
register(run) with itself; the runner's names are used as `R.<name>`.
"""

R = None  # the runner module (run.py), set by register()

SCENARIOS = []


def register(runner):
    """Adds this module's scenarios to the runner's list (in this order)."""
    global R
    R = runner
    for name, fn, modes in SCENARIOS:
        runner.scenario(name, modes=modes)(fn)


def scenario(name, modes):
    def add(fn):
        SCENARIOS.append((name, fn, modes))
        return fn
    return add


CONTROLLER_JVM = ["-Xms128m", "-Xmx256m", "-XX:+UseSerialGC"]
JAVA_BOOT = "The Controller Server boot success"
OURS_BOOT = "rmq-namesrv controller listening on "


def standalone_props(ctx, label, ctl_addr):
    """controller.properties as Java's quick-start controller.conf has it: one DLedger node."""
    return {
        "controllerDLegerGroup": "group1",
        "controllerDLegerPeers": f"n0-{ctl_addr}",
        "controllerDLegerSelfId": "n0",
        "controllerStorePath": ctx.dir / f"{label}-store",
        "enableElectUncleanMaster": "false",
        "notifyBrokerRoleChanged": "true",
    }


def start_ours(ctx, label, ctl_addr):
    """Our standalone controller: `rmq-namesrv controller -c controller.properties`."""
    if not ctx.binary.is_file():
        raise R.Fail(f"{ctx.binary} not found: run `cargo build --release`")
    home = ctx.home(label)
    conf = home / "controller.properties"
    R.write_properties(conf, standalone_props(ctx, label, ctl_addr))
    argv = [str(ctx.binary), "controller", "-c", str(conf), "--log-level", "info"]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home, env={"HOME": str(home)})
    proc.addr = ctl_addr
    ctx.logs.append((f"{label} stderr", proc.stderr))
    ctx._await_boot(proc, OURS_BOOT + ctl_addr, 30)
    return proc


def start_java(ctx, label, ctl_addr):
    """Java's standalone controller 5.5.0 (ControllerStartup -c controller.properties)."""
    home = ctx.home(label)
    conf = home / "controller.properties"
    # DLedger's log files are 1 GiB by default (mapped, sparse); a test needs little.
    R.write_properties(conf, {**standalone_props(ctx, label, ctl_addr), "mappedFileSize": 16 * 1024 * 1024,
                              "rocketmqHome": home})
    classpath = R.server_classpath("5", "namesrv")
    if "rocketmq-controller-" not in classpath:
        raise R.Fail("no rocketmq-controller jar in the 5.5.0 server jars: run interop/setup.sh")
    argv = [R.java_bin(), *CONTROLLER_JVM, f"-Duser.home={home}", "-cp", classpath,
            "org.apache.rocketmq.controller.ControllerStartup", "-c", str(conf)]
    (home / "argv.txt").write_text(" ".join(argv) + "\n")
    proc = ctx.spawn(label, argv, home, env={"ROCKETMQ_HOME": str(home)})
    proc.addr = ctl_addr
    ctx.logs.append((f"{label} stdout", proc.stdout))
    ctx.logs.append((f"{label} controller.log", home / "logs" / "rocketmqlogs" / "controller.log"))
    ctx._await_boot(proc, JAVA_BOOT, 60)
    return proc


@scenario("controller-standalone5", modes=("ours", "java"))
def s_controller_standalone5(ctx):
    """controller-failover5 with the controller as a process of its own (ours: `rmq-namesrv
    controller -c controller.properties`; --namesrv java: Java's ControllerStartup 5.5.0) and our
    NameServer without a controller: two 5.5.0 brokers in controller mode, the master SIGKILLed,
    the slave id 0 in the route (timed), the sender through it (timed), the old master back as
    slave. The controller leader is the standalone one (getControllerMetaData)."""
    ctl_addr = f"127.0.0.1:{R.free_port()}"
    which = "ours" if ctx.mode == "ours" else "java"
    start = start_ours if which == "ours" else start_java
    controller = start(ctx, f"controller-{which}", ctl_addr)
    ns = ctx._start_ours("namesrv")
    R.wait_until(f"the standalone controller to accept on {ctl_addr}", 30, 0.3,
                 lambda: controller.alive() and R.port_open(ctl_addr) or ctx._dead(controller))
    timings = R.controller_failover(ctx, ns.addr, ctl_addr)
    R.check(controller.alive(), f"the standalone controller ({which}) exited during the scenario", ctx.logs)
    stopped = ctx.stop(controller, timeout=30)
    if which == "ours":
        R.check(controller.popen.returncode == 0,
                f"our standalone controller exited {controller.popen.returncode} after SIGTERM", ctx.logs)
    print(f"# {ctx.name}: standalone controller ({which}): the slave id 0 in the route {timings['failover']:.1f} s "
          f"after the kill, the sender's first success {timings['resumed']:.1f} s after it, the old master back "
          f"as slave {timings['rejoined']:.1f} s after its restart; SIGTERM stop {stopped:.1f} s", flush=True)
