package rmqinterop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Route lookups in a loop: GET_ROUTEINFO_BY_TOPIC through the client's MQClientAPIImpl (what
 * producers and consumers use; every call is a request to the NameServer, no client-side cache),
 * one after another, each recorded with its wall-clock start and end.
 *
 *   RouteLoop --namesrv a --topic T [--broker B] [--stop-file F] [--max-count N] [--max-s S]
 *             [--interval-ms M] [--timeout-ms T]
 *
 * Prints "READY" once the first lookup has succeeded, then loops until the file F exists, N
 * lookups were made or S seconds passed (defaults 5000, 60 s; pause M ms between lookups,
 * default 20; each call's timeout T ms, default 3000). A lookup succeeds when the NameServer
 * answers the route and (with --broker) it names broker B. An RPC hook records the `version` of
 * every GET_ROUTEINFO_BY_TOPIC request the client sends (the 5.x client puts its
 * MQVersion.CURRENT_VERSION there). Result: {"ok": true when the loop ran, "lookups":
 * [[startMs, endMs, code], ...] (code 0: success; else the response code, -1 without one, -2
 * route without B), "failures": [{"i","startMs","endMs","code","error"}] (at most 50),
 * "succeeded", "failed", "requestVersions", "currentVersion", "stop"}. The caller decides which
 * failures matter (e.g. those after the NameServer stopped do not).
 */
public final class RouteLoop {
    private static final String PEER = "route-loop";
    private static final int GET_ROUTEINFO_BY_TOPIC = 105;

    public static void main(String[] argv) throws InterruptedException {
        Util.Args args = new Util.Args(argv);
        String namesrv;
        String topic;
        try {
            namesrv = args.require("namesrv");
            topic = args.require("topic");
        } catch (RuntimeException e) {
            Util.usage(PEER, e.getMessage());
            return;
        }
        String broker = args.get("broker", null);
        String stopFile = args.get("stop-file", null);
        Path stop = stopFile == null ? null : Paths.get(stopFile);
        int maxCount = args.getInt("max-count", 5000);
        long maxMs = 1000L * args.getInt("max-s", 60);
        long interval = args.getInt("interval-ms", 20);
        long timeout = args.getInt("timeout-ms", 3000);

        Set<Integer> versions = new ConcurrentSkipListSet<>();
        RPCHook hook = new RPCHook() {
            @Override
            public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
                if (request.getCode() == GET_ROUTEINFO_BY_TOPIC) {
                    versions.add(request.getVersion());
                }
            }

            @Override
            public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
            }
        };
        ClientConfig cfg = new ClientConfig();
        cfg.setNamesrvAddr(namesrv);
        cfg.setInstanceName("interop-route-loop-" + ProcessHandle.current().pid());
        var instance = MQClientManager.getInstance().getOrCreateMQClientInstance(cfg, hook);
        int exit;
        try {
            instance.start();
            var api = instance.getMQClientAPIImpl();
            long start = System.currentTimeMillis();
            List<Object> lookups = new ArrayList<>();
            List<Object> failures = new ArrayList<>();
            int succeeded = 0;
            int failed = 0;
            boolean ready = false;
            String why = "max-count";
            for (int i = 0; i < maxCount; i++) {
                if (stop != null && Files.exists(stop)) {
                    why = "stop-file";
                    break;
                }
                if (System.currentTimeMillis() - start >= maxMs) {
                    why = "max-s";
                    break;
                }
                long t0 = System.currentTimeMillis();
                int code;
                String error = null;
                try {
                    var route = api.getTopicRouteInfoFromNameServer(topic, timeout);
                    code = 0;
                    if (broker != null) {
                        boolean named = false;
                        for (var bd : route.getBrokerDatas()) {
                            named |= broker.equals(bd.getBrokerName());
                        }
                        if (!named) {
                            code = -2;
                            error = "route does not name " + broker;
                        }
                    }
                } catch (Exception e) {
                    code = Util.errorCode(e);
                    error = Util.describe(e);
                    if (e.getCause() != null) {
                        error += " <- " + Util.describe(e.getCause());
                    }
                }
                long t1 = System.currentTimeMillis();
                List<Object> entry = new ArrayList<>();
                entry.add(t0);
                entry.add(t1);
                entry.add(code);
                lookups.add(entry);
                if (code == 0) {
                    succeeded++;
                    if (!ready) {
                        ready = true;
                        System.out.println("READY");
                        System.out.flush();
                    }
                } else {
                    failed++;
                    if (failures.size() < 50) {
                        failures.add(Util.obj().with("i", i).with("startMs", t0).with("endMs", t1)
                            .with("code", code).with("error", error));
                    }
                }
                Thread.sleep(interval);
            }
            exit = Util.emit(PEER, Util.obj().with("ok", true).with("topic", topic).with("stop", why)
                .with("succeeded", succeeded).with("failed", failed)
                .with("requestVersions", new ArrayList<>(new TreeSet<>(versions)))
                .with("currentVersion", MQVersion.CURRENT_VERSION)
                .with("failures", failures).with("lookups", lookups));
        } catch (Exception e) {
            exit = Util.emit(PEER, Util.failure(e).with("topic", topic));
        }
        Util.exit(exit, instance::shutdown);
    }

}
