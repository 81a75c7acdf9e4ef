package rmqinterop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.protocol.body.BrokerReplicasInfo;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.body.HARuntimeInfo;
import org.apache.rocketmq.remoting.protocol.body.KVTable;
import org.apache.rocketmq.remoting.protocol.body.TopicList;
import org.apache.rocketmq.remoting.protocol.header.controller.GetMetaDataResponseHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.QueueData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * NameServer admin operations through DefaultMQAdminExt (rocketmq-tools 5.x, what mqadmin uses).
 *
 *   Admin --namesrv 'a;b' [--ak AK --sk SK] OP [ARGS...]   one operation; exit 0 when it succeeded
 *   Admin --namesrv 'a;b' [--ak AK --sk SK] --batch        one operation per stdin line (blank and
 *                                          # lines skipped); exit 0 once all ran, whatever their result
 *
 * --ak/--sk: every request is signed as mqadmin does with ACL credentials, by
 * new DefaultMQAdminExt(new AclClientRPCHook(new SessionCredentials(AK, SK)), timeout) (ext fields
 * AccessKey and Signature); without them there is no RPC hook at all.
 *
 * Each operation prints one line: RESULT {"peer":"admin","op":OP,"ok":..,...}; a failed call has
 * "code" (the RocketMQ response code, -1 if none), "error" and, when the server answered with an
 * error, "remark" (its remark, as MQClientException/MQBrokerException.getErrorMessage() hold it)
 * and "exception" (the class of that exception). Operations:
 *
 *   credentials AK SK | credentials -  from here on use another DefaultMQAdminExt (its own client
 *                                    instance) signing with AK/SK, or with no RPC hook ("-");
 *                                    -> accessKey (the secret is never printed)
 *
 *   clusterList                      examineBrokerClusterInfo -> clusters, brokers
 *   clusterWait BROKER IDS SECONDS   repeat clusterList (every 250 ms, at most SECONDS) until broker
 *                                    BROKER has exactly the ids IDS (comma list; "-" = absent)
 *   topicRoute TOPIC                 examineTopicRouteInfo -> brokers, queues
 *   topicList                        fetchAllTopicList -> topics
 *   topicListByCluster CLUSTER       fetchTopicsByCLuster -> topics
 *   systemTopicList                  MQClientAPIImpl.getSystemTopicList -> topics
 *   kvPut NS KEY VALUE               createAndUpdateKvConfig (all NameServers)
 *   kvGet NS KEY                     getKVConfig -> value
 *   kvDelete NS KEY                  deleteKvConfig (all NameServers)
 *   kvList NS                        getKVListByNamespace -> table
 *   wipeWritePerm NSADDR BROKER      wipeWritePermOfBroker -> count
 *   addWritePerm NSADDR BROKER       addWritePermOfBroker -> count
 *   deleteTopic TOPIC [CLUSTER]      deleteTopicInNameServer on every NameServer of --namesrv
 *   getNamesrvConfig                 getNameServerConfig(all) -> configs {addr: {key: value}}
 *   updateNamesrvConfig K=V...       updateNameServerConfig(all)
 *   haStatus BROKERADDR              getBrokerHAStatus (asks the broker) -> master, masterAddr, slaves
 *   createTopic BROKERADDR TOPIC QUEUES [KEY=VALUE...]  createAndUpdateTopicConfig on that broker
 *                                    (QUEUES read and write queues, perm 6, topic attributes such
 *                                    as message.type=FIFO, sent as "+KEY"); the broker then
 *                                    registers the topic with its NameServers
 *
 * Controller (RIP-44) operations; CTL is one controller address (host:port):
 *   controllerMeta CTL               getControllerMetaData (1005) -> group, leaderId, leaderAddress,
 *                                    isLeader, peers
 *   controllerLeaderWait CTL SECONDS repeat controllerMeta (every 250 ms, errors tolerated, at most
 *                                    SECONDS) until CTL answers isLeader=true
 *   syncStateSet CTL BROKER          getInSyncStateData (1005 to CTL for the leader, then 1006 to it)
 *                                    -> found, masterId, masterAddress, masterEpoch,
 *                                    syncStateSetEpoch, inSync, notInSync ([{id, addr, alive}])
 *   syncStateWait CTL BROKER ADDRS SECONDS  repeat syncStateSet (every 500 ms, errors tolerated)
 *                                    until the in-sync replicas' addresses are exactly ADDRS (comma list)
 */
public final class Admin {
    private static final String PEER = "admin";

    private final String namesrv;
    private final List<String> namesrvs;
    /** Every admin started (shut down at exit); the last one is in use. */
    private final List<DefaultMQAdminExt> started = new ArrayList<>();
    private DefaultMQAdminExt admin;

    private Admin(String namesrv) {
        this.namesrv = namesrv;
        this.namesrvs = Arrays.asList(namesrv.split(";"));
    }

    /**
     * Starts a DefaultMQAdminExt signing with (ak, sk) through AclClientRPCHook, or without an RPC
     * hook when ak is null, and makes it the one in use. Each gets its own instance name, hence
     * its own client instance (MQClientManager keys them by client id, and the hook is the
     * instance's).
     */
    private void use(String ak, String sk) throws MQClientException {
        DefaultMQAdminExt ext = ak == null ? new DefaultMQAdminExt(5000)
            : new DefaultMQAdminExt(new AclClientRPCHook(new SessionCredentials(ak, sk)), 5000);
        ext.setNamesrvAddr(namesrv);
        ext.setInstanceName("interop-admin-" + ProcessHandle.current().pid() + "-" + started.size());
        started.add(ext);
        ext.start();
        admin = ext;
    }

    private void shutdownAll() {
        for (DefaultMQAdminExt ext : started) {
            ext.shutdown();
        }
    }

    public static void main(String[] argv) throws Exception {
        Util.Args args = new Util.Args(argv);
        String namesrv;
        String ak = args.get("ak", null);
        String sk = args.get("sk", null);
        try {
            namesrv = args.require("namesrv");
            if (!args.flag("batch") && args.positional.isEmpty()) {
                throw new IllegalArgumentException("OP [ARGS...] or --batch");
            }
            if ((ak == null) != (sk == null)) {
                throw new IllegalArgumentException("--ak and --sk go together");
            }
        } catch (RuntimeException e) {
            Util.usage(PEER, e.getMessage());
            return;
        }
        Admin a = new Admin(namesrv);
        int exit;
        try {
            a.use(ak, sk);
            if (args.flag("batch")) {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    line = line.trim();
                    if (!line.isEmpty() && !line.startsWith("#")) {
                        a.run(Arrays.asList(line.split("\\s+")));
                    }
                }
                exit = 0;
            } else {
                exit = a.run(args.positional);
            }
        } catch (Exception e) {
            exit = Util.emit(PEER, failure(e));
        }
        Util.exit(exit, a::shutdownAll);
    }

    /**
     * Util.failure plus what the server answered: "remark" and "exception" of the first
     * MQClientException (with a response code) or MQBrokerException in the cause chain.
     */
    private static Util.Obj failure(Throwable t) {
        Util.Obj r = Util.failure(t);
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof MQClientException && ((MQClientException) c).getResponseCode() != -1) {
                return r.with("remark", ((MQClientException) c).getErrorMessage())
                    .with("exception", c.getClass().getSimpleName());
            }
            if (c instanceof MQBrokerException) {
                return r.with("remark", ((MQBrokerException) c).getErrorMessage())
                    .with("exception", c.getClass().getSimpleName());
            }
        }
        return r;
    }

    /** Runs one operation, prints its result line, returns 0 if it succeeded. */
    private int run(List<String> words) {
        String op = words.get(0);
        List<String> a = words.subList(1, words.size());
        Util.Obj r;
        try {
            r = Util.obj().with("ok", true);
            r.putAll(call(op, a));
        } catch (IllegalArgumentException e) {
            r = Util.obj().with("ok", false).with("code", -1).with("error", "usage: " + e.getMessage());
        } catch (Exception e) {
            r = failure(e);
        }
        Util.Obj line = Util.obj().with("op", op);
        line.putAll(r);
        return Util.emit(PEER, line);
    }

    private Util.Obj call(String op, List<String> a) throws Exception {
        switch (op) {
            case "credentials": {
                if (a.size() == 1 && a.get(0).equals("-")) {
                    use(null, null);
                    return Util.obj().with("accessKey", null);
                }
                need(a, 2, op + " AK SK | " + op + " -");
                use(a.get(0), a.get(1));
                return Util.obj().with("accessKey", a.get(0));
            }
            case "clusterList":
                need(a, 0, op);
                return clusterInfo(admin.examineBrokerClusterInfo());
            case "clusterWait": {
                need(a, 3, op + " BROKER IDS|- SECONDS");
                return clusterWait(a.get(0), a.get(1), Integer.parseInt(a.get(2)));
            }
            case "topicRoute":
                need(a, 1, op + " TOPIC");
                return route(admin.examineTopicRouteInfo(a.get(0)));
            case "topicList":
                need(a, 0, op);
                return topics(admin.fetchAllTopicList());
            case "topicListByCluster":
                need(a, 1, op + " CLUSTER");
                return topics(admin.fetchTopicsByCLuster(a.get(0)));
            case "systemTopicList":
                need(a, 0, op);
                return topics(admin.getDefaultMQAdminExtImpl().getMqClientInstance().getMQClientAPIImpl()
                    .getSystemTopicList(5000));
            case "kvPut":
                need(a, 3, op + " NS KEY VALUE");
                admin.createAndUpdateKvConfig(a.get(0), a.get(1), a.get(2));
                return Util.obj();
            case "kvGet":
                need(a, 2, op + " NS KEY");
                return Util.obj().with("value", admin.getKVConfig(a.get(0), a.get(1)));
            case "kvDelete":
                need(a, 2, op + " NS KEY");
                admin.deleteKvConfig(a.get(0), a.get(1));
                return Util.obj();
            case "kvList": {
                need(a, 1, op + " NS");
                KVTable t = admin.getKVListByNamespace(a.get(0));
                return Util.obj().with("table", new TreeMap<>(t.getTable()));
            }
            case "wipeWritePerm":
                need(a, 2, op + " NSADDR BROKER");
                return Util.obj().with("count", admin.wipeWritePermOfBroker(a.get(0), a.get(1)));
            case "addWritePerm":
                need(a, 2, op + " NSADDR BROKER");
                return Util.obj().with("count", admin.addWritePermOfBroker(a.get(0), a.get(1)));
            case "deleteTopic": {
                if (a.size() != 1 && a.size() != 2) {
                    throw new IllegalArgumentException(op + " TOPIC [CLUSTER]");
                }
                Set<String> addrs = new HashSet<>(namesrvs);
                if (a.size() == 1) {
                    admin.deleteTopicInNameServer(addrs, a.get(0));
                } else {
                    admin.deleteTopicInNameServer(addrs, a.get(1), a.get(0));
                }
                return Util.obj();
            }
            case "getNamesrvConfig": {
                need(a, 0, op);
                Map<String, Object> configs = new TreeMap<>();
                for (Map.Entry<String, Properties> e : admin.getNameServerConfig(namesrvs).entrySet()) {
                    Map<String, Object> kv = new TreeMap<>();
                    for (String k : e.getValue().stringPropertyNames()) {
                        kv.put(k, e.getValue().getProperty(k));
                    }
                    configs.put(e.getKey(), kv);
                }
                return Util.obj().with("configs", configs);
            }
            case "updateNamesrvConfig": {
                if (a.isEmpty()) {
                    throw new IllegalArgumentException(op + " KEY=VALUE...");
                }
                Properties p = new Properties();
                for (String kv : a) {
                    int eq = kv.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException(op + " KEY=VALUE...");
                    }
                    p.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
                }
                admin.updateNameServerConfig(p, namesrvs);
                return Util.obj();
            }
            case "haStatus": {
                need(a, 1, op + " BROKERADDR");
                HARuntimeInfo ha = admin.getBrokerHAStatus(a.get(0));
                List<Object> slaves = new ArrayList<>();
                for (HARuntimeInfo.HAConnectionRuntimeInfo c : ha.getHaConnectionInfo()) {
                    slaves.add(Util.obj().with("addr", c.getAddr()).with("inSync", c.isInSync())
                        .with("ackOffset", c.getSlaveAckOffset()));
                }
                HARuntimeInfo.HAClientRuntimeInfo client = ha.getHaClientRuntimeInfo();
                return Util.obj().with("master", ha.isMaster())
                    .with("masterAddr", client == null ? null : client.getMasterAddr())
                    .with("masterCommitLogMaxOffset", ha.getMasterCommitLogMaxOffset())
                    .with("slaves", slaves);
            }
            case "createTopic": {
                if (a.size() < 3) {
                    throw new IllegalArgumentException(op + " BROKERADDR TOPIC QUEUES [KEY=VALUE...]");
                }
                int queues = Integer.parseInt(a.get(2));
                TopicConfig config = new TopicConfig(a.get(1), queues, queues, 6);
                Map<String, String> attributes = new TreeMap<>();
                for (String kv : a.subList(3, a.size())) {
                    int eq = kv.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException(op + " ... KEY=VALUE");
                    }
                    attributes.put("+" + kv.substring(0, eq), kv.substring(eq + 1));
                }
                config.setAttributes(attributes);
                admin.createAndUpdateTopicConfig(a.get(0), config);
                return Util.obj().with("topic", a.get(1)).with("attributes", attributes);
            }
            case "controllerMeta":
                need(a, 1, op + " CTL");
                return controllerMeta(admin.getControllerMetaData(a.get(0)));
            case "controllerLeaderWait": {
                need(a, 2, op + " CTL SECONDS");
                long start = System.currentTimeMillis();
                long deadline = start + 1000L * Integer.parseInt(a.get(1));
                String last = null;
                while (true) {
                    try {
                        GetMetaDataResponseHeader h = admin.getControllerMetaData(a.get(0));
                        if (h.isLeader()) {
                            return controllerMeta(h).with("elapsedMs", System.currentTimeMillis() - start);
                        }
                        last = h.toString();
                    } catch (Exception e) {
                        last = Util.describe(e);
                    }
                    if (System.currentTimeMillis() >= deadline) {
                        throw new IllegalStateException("after " + a.get(1) + " s " + a.get(0)
                            + " is not the controller leader; last answer: " + last);
                    }
                    Thread.sleep(250);
                }
            }
            case "syncStateSet":
                need(a, 2, op + " CTL BROKER");
                return syncState(admin.getInSyncStateData(a.get(0), Arrays.asList(a.get(1))), a.get(1));
            case "syncStateWait": {
                need(a, 4, op + " CTL BROKER ADDRS SECONDS");
                Set<String> want = new TreeSet<>(Arrays.asList(a.get(2).split(",")));
                long start = System.currentTimeMillis();
                long deadline = start + 1000L * Integer.parseInt(a.get(3));
                Object last = null;
                while (true) {
                    try {
                        Util.Obj r = syncState(admin.getInSyncStateData(a.get(0), Arrays.asList(a.get(1))), a.get(1));
                        if (want.equals(r.get("inSyncAddrs"))) {
                            return r.with("elapsedMs", System.currentTimeMillis() - start);
                        }
                        last = Util.json(r);
                    } catch (Exception e) {
                        last = Util.describe(e);
                    }
                    if (System.currentTimeMillis() >= deadline) {
                        throw new IllegalStateException("after " + a.get(3) + " s the SyncStateSet of " + a.get(1)
                            + " is not " + want + "; last: " + last);
                    }
                    Thread.sleep(500);
                }
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static void need(List<String> a, int n, String usage) {
        if (a.size() != n) {
            throw new IllegalArgumentException(usage);
        }
    }

    private Util.Obj clusterWait(String broker, String ids, int seconds) throws Exception {
        Set<String> want = ids.equals("-") ? null : new TreeSet<>(Arrays.asList(ids.split(",")));
        long start = System.currentTimeMillis();
        long deadline = start + 1000L * seconds;
        while (true) {
            ClusterInfo ci = admin.examineBrokerClusterInfo();
            BrokerData bd = ci.getBrokerAddrTable() == null ? null : ci.getBrokerAddrTable().get(broker);
            Set<String> have = bd == null || bd.getBrokerAddrs().isEmpty() ? null : addrs(bd).keySet();
            boolean done = want == null ? have == null : want.equals(have);
            if (done || System.currentTimeMillis() >= deadline) {
                Util.Obj r = clusterInfo(ci).with("elapsedMs", System.currentTimeMillis() - start);
                if (!done) {
                    throw new IllegalStateException("after " + seconds + " s broker " + broker + " has ids "
                        + have + ", expected " + (want == null ? "none" : want) + "; cluster info: "
                        + Util.json(r));
                }
                return r;
            }
            Thread.sleep(250);
        }
    }

    private static Util.Obj controllerMeta(GetMetaDataResponseHeader h) {
        return Util.obj().with("group", h.getGroup()).with("leaderId", h.getControllerLeaderId())
            .with("leaderAddress", h.getControllerLeaderAddress()).with("isLeader", h.isLeader())
            .with("peers", h.getPeers());
    }

    private static List<Object> replicas(List<BrokerReplicasInfo.ReplicaIdentity> list, Set<String> addrs) {
        List<Object> out = new ArrayList<>();
        if (list != null) {
            for (BrokerReplicasInfo.ReplicaIdentity r : list) {
                out.add(Util.obj().with("id", r.getBrokerId()).with("addr", r.getBrokerAddress())
                    .with("alive", r.getAlive()));
                if (addrs != null) {
                    addrs.add(r.getBrokerAddress());
                }
            }
        }
        return out;
    }

    private static Util.Obj syncState(BrokerReplicasInfo info, String broker) {
        BrokerReplicasInfo.ReplicasInfo ri = info == null || info.getReplicasInfoTable() == null ? null
            : info.getReplicasInfoTable().get(broker);
        if (ri == null) {
            return Util.obj().with("found", false);
        }
        Set<String> inSyncAddrs = new TreeSet<>();
        return Util.obj().with("found", true).with("masterId", ri.getMasterBrokerId())
            .with("masterAddress", ri.getMasterAddress()).with("masterEpoch", ri.getMasterEpoch())
            .with("syncStateSetEpoch", ri.getSyncStateSetEpoch())
            .with("inSync", replicas(ri.getInSyncReplicas(), inSyncAddrs))
            .with("notInSync", replicas(ri.getNotInSyncReplicas(), null))
            .with("inSyncAddrs", inSyncAddrs);
    }

    private static Util.Obj topics(TopicList t) {
        return Util.obj().with("topics", new TreeSet<>(t.getTopicList()));
    }

    private static Map<String, Object> addrs(BrokerData bd) {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<Long, String> e : bd.getBrokerAddrs().entrySet()) {
            m.put(String.valueOf(e.getKey()), e.getValue());
        }
        return m;
    }

    private static Util.Obj clusterInfo(ClusterInfo ci) {
        Map<String, Object> clusters = new TreeMap<>();
        if (ci.getClusterAddrTable() != null) {
            for (Map.Entry<String, Set<String>> e : ci.getClusterAddrTable().entrySet()) {
                clusters.put(e.getKey(), new TreeSet<>(e.getValue()));
            }
        }
        Map<String, Object> brokers = new TreeMap<>();
        if (ci.getBrokerAddrTable() != null) {
            for (Map.Entry<String, BrokerData> e : ci.getBrokerAddrTable().entrySet()) {
                brokers.put(e.getKey(), Util.obj().with("cluster", e.getValue().getCluster())
                    .with("addrs", addrs(e.getValue())));
            }
        }
        return Util.obj().with("clusters", clusters).with("brokers", brokers);
    }

    private static Util.Obj route(TopicRouteData route) {
        List<Object> brokers = new ArrayList<>();
        for (BrokerData bd : route.getBrokerDatas()) {
            brokers.add(Util.obj().with("name", bd.getBrokerName()).with("cluster", bd.getCluster())
                .with("addrs", addrs(bd)));
        }
        List<Object> queues = new ArrayList<>();
        for (QueueData qd : route.getQueueDatas()) {
            queues.add(Util.obj().with("broker", qd.getBrokerName()).with("read", qd.getReadQueueNums())
                .with("write", qd.getWriteQueueNums()).with("perm", qd.getPerm()));
        }
        return Util.obj().with("brokers", brokers).with("queues", queues);
    }
}
