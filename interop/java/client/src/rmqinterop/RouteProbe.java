package rmqinterop;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.impl.MQClientManager;

/**
 * Asks the NameServers for a topic's route (GET_ROUTEINFO_BY_TOPIC through the client's
 * MQClientAPIImpl, exactly what producers and consumers use) and checks an expectation.
 *
 *   RouteProbe --namesrv 'a;b' --topic T [--expect present|missing] [--ids 0,1]
 *              [--brokers a,b] [--wait-s S]
 *
 * present (default): the route exists (and, if given, its broker ids / names are exactly these);
 * missing: the NameServer answers TOPIC_NOT_EXIST (code 17) - any other error fails.
 * With --wait-s the query is repeated every 250 ms until the expectation holds or S seconds
 * pass. A call that fails without a response code (e.g. the NameServer the client picked is down;
 * the client then moves on to the next one) is retried up to 3 more times in any case. Result: {"ok":..,"code":0|17|..,"brokers":[{"name","cluster","addrs":{id:addr}}],
 * "queues":[{"broker","read","write","perm"}],"attempts":n,"elapsedMs":..}.
 */
public final class RouteProbe {
    private static final String PEER = "route";

    public static void main(String[] argv) throws InterruptedException {
        Util.Args args = new Util.Args(argv);
        String namesrv;
        String topic;
        String expect;
        try {
            namesrv = args.require("namesrv");
            topic = args.require("topic");
            expect = args.get("expect", "present");
            if (!expect.equals("present") && !expect.equals("missing")) {
                throw new IllegalArgumentException("--expect present|missing");
            }
        } catch (RuntimeException e) {
            Util.usage(PEER, e.getMessage());
            return;
        }
        TreeSet<String> wantIds = split(args.get("ids", null));
        TreeSet<String> wantBrokers = split(args.get("brokers", null));
        long start = System.currentTimeMillis();
        long deadline = start + 1000L * args.getInt("wait-s", 0);

        ClientConfig cfg = new ClientConfig();
        cfg.setNamesrvAddr(namesrv);
        cfg.setInstanceName("interop-route-" + ProcessHandle.current().pid());
        var instance = MQClientManager.getInstance().getOrCreateMQClientInstance(cfg);
        int exit;
        try {
            instance.start();
            var api = instance.getMQClientAPIImpl();
            int attempts = 0;
            int transportRetries = 3;
            Util.Obj r;
            while (true) {
                attempts++;
                try {
                    var route = api.getTopicRouteInfoFromNameServer(topic, 3000);
                    List<Object> brokers = new ArrayList<>();
                    TreeSet<String> ids = new TreeSet<>();
                    TreeSet<String> names = new TreeSet<>();
                    for (var bd : route.getBrokerDatas()) {
                        Map<String, Object> addrs = new TreeMap<>();
                        for (Map.Entry<Long, String> e : bd.getBrokerAddrs().entrySet()) {
                            addrs.put(String.valueOf(e.getKey()), e.getValue());
                            ids.add(String.valueOf(e.getKey()));
                        }
                        names.add(bd.getBrokerName());
                        brokers.add(Util.obj().with("name", bd.getBrokerName())
                            .with("cluster", bd.getCluster()).with("addrs", addrs));
                    }
                    List<Object> queues = new ArrayList<>();
                    for (var qd : route.getQueueDatas()) {
                        queues.add(Util.obj().with("broker", qd.getBrokerName())
                            .with("read", qd.getReadQueueNums()).with("write", qd.getWriteQueueNums())
                            .with("perm", qd.getPerm()));
                    }
                    boolean ok = expect.equals("present") && !brokers.isEmpty()
                        && (wantIds == null || wantIds.equals(ids))
                        && (wantBrokers == null || wantBrokers.equals(names));
                    r = Util.obj().with("ok", ok).with("code", 0).with("brokers", brokers).with("queues", queues);
                    if (!ok) {
                        r.with("error", "route present but expected " + expect
                            + (wantIds != null ? " ids=" + wantIds : "")
                            + (wantBrokers != null ? " brokers=" + wantBrokers : ""));
                    }
                } catch (Exception e) {
                    r = Util.failure(e);
                    boolean ok = expect.equals("missing") && Util.errorCode(e) == 17;
                    r.put("ok", ok);
                }
                boolean transportError = Integer.valueOf(-1).equals(r.get("code"));
                if (Boolean.TRUE.equals(r.get("ok"))
                    || System.currentTimeMillis() >= deadline && !(transportError && transportRetries-- > 0)) {
                    break;
                }
                Thread.sleep(250);
            }
            r.with("topic", topic).with("expect", expect).with("attempts", attempts)
                .with("elapsedMs", System.currentTimeMillis() - start);
            exit = Util.emit(PEER, r);
        } catch (Exception e) {
            exit = Util.emit(PEER, Util.failure(e).with("topic", topic));
        }
        Util.exit(exit, instance::shutdown);
    }

    private static TreeSet<String> split(String csv) {
        if (csv == null || csv.isEmpty()) {
            return null;
        }
        return new TreeSet<>(Arrays.asList(csv.split(",")));
    }
}
