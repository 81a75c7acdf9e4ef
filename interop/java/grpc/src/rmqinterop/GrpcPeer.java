package rmqinterop;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.java.impl.producer.SendReceiptImpl;

/**
 * The RocketMQ 5.x gRPC SDK (rocketmq-client-java) against a RocketMQ Proxy: it never talks to a
 * NameServer itself; the proxy looks routes up for it.
 *
 *   GrpcPeer send   --endpoints HOST:PORT --count N [--prefix P] [--normal TOPIC]
 *                   [--fifo TOPIC --message-group G] [--delay TOPIC --delay-ms MS] [--timeout-s S]
 *   GrpcPeer simple --endpoints HOST:PORT --group G --topics T1,T2 --count N [--timeout-s S]
 *   GrpcPeer push   --endpoints HOST:PORT --group G --topics T1,T2 --count N [--timeout-s S]
 *
 * send: one Producer sends N messages of each kind given: normal, FIFO (all in message group G)
 * and delayed (delivery timestamp = now + MS at each send). Message i of kind K has key and body
 * "P-K-i". The producer is built (it asks the proxy for the topics' routes) and each message sent
 * again until it succeeds or --timeout-s runs out. Result: sent and failed attempts per kind, the
 * brokers the receipts name per kind (SendReceiptImpl's message queue), the first errors.
 *
 * simple / push: a SimpleConsumer (receive 16, invisible 30 s, ack each) or a PushConsumer
 * (ConsumeResult.SUCCESS) of group G subscribed to every topic with "*", until N distinct bodies
 * came or --timeout-s runs out. Result: received (distinct), deliveries, per topic, the earliest a
 * delayed message came relative to its delivery timestamp (minDelayLateMs; negative = early),
 * whether each FIFO message group came in send order, and up to 10 missing-body hints.
 *
 * Every command prints one line RESULT {"peer":"grpc","cmd":..,"ok":..,...} and exits 0 when
 * ok, 1 when not, 2 on bad usage. No SSL (enableSsl(false)): the proxy's gRPC port accepts
 * plaintext in its default permissive TLS mode. This classpath has no remoting client, hence
 * no shared Util; the small argument parser and JSON writer here are its own.
 */
public final class GrpcPeer {
    private static final String PEER = "grpc";
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    public static void main(String[] argv) {
        Map<String, String> opts = new LinkedHashMap<>();
        String cmd = null;
        for (int i = 0; i < argv.length; i++) {
            if (argv[i].startsWith("--") && i + 1 < argv.length) {
                opts.put(argv[i].substring(2), argv[++i]);
            } else if (cmd == null) {
                cmd = argv[i];
            } else {
                usage("unexpected argument " + argv[i]);
            }
        }
        Map<String, Object> result;
        try {
            if (cmd == null || !opts.containsKey("endpoints") || !opts.containsKey("count")) {
                usage("send|simple|push --endpoints HOST:PORT --count N ...");
            }
            ClientConfiguration conf = ClientConfiguration.newBuilder()
                .setEndpoints(opts.get("endpoints"))
                .enableSsl(false)
                .setRequestTimeout(Duration.ofSeconds(5))
                .build();
            int count = Integer.parseInt(opts.get("count"));
            long deadline = System.currentTimeMillis() + 1000L * Integer.parseInt(opts.getOrDefault("timeout-s", "60"));
            switch (cmd) {
                case "send":
                    result = send(conf, opts, count, deadline);
                    break;
                case "simple":
                case "push":
                    if (!opts.containsKey("group") || !opts.containsKey("topics")) {
                        usage(cmd + " needs --group and --topics");
                    }
                    Receiver r = new Receiver(count, opts.get("topics").split(","));
                    result = cmd.equals("simple") ? r.simple(conf, opts.get("group"), deadline)
                        : r.push(conf, opts.get("group"), deadline);
                    break;
                default:
                    usage("unknown command " + cmd);
                    return;
            }
        } catch (Exception e) {
            e.printStackTrace();
            result = obj("ok", false, "error", describe(e));
        }
        Map<String, Object> line = obj("peer", PEER, "cmd", cmd);
        line.putAll(result);
        System.out.println("RESULT " + json(line));
        System.out.flush();
        // the SDK's threads (gRPC, schedulers) are not daemons; close() was bounded above
        Runtime.getRuntime().halt(Boolean.TRUE.equals(result.get("ok")) ? 0 : 1);
    }

    // -- send -----------------------------------------------------------------------------------

    private static Map<String, Object> send(ClientConfiguration conf, Map<String, String> opts, int count,
                                            long deadline) throws Exception {
        String prefix = opts.getOrDefault("prefix", "m");
        Map<String, String> topics = new LinkedHashMap<>();
        for (String kind : new String[] {"normal", "fifo", "delay"}) {
            if (opts.containsKey(kind)) {
                topics.put(kind, opts.get(kind));
            }
        }
        if (topics.isEmpty()) {
            usage("send needs --normal, --fifo and/or --delay");
        }
        String group = opts.get("message-group");
        long delayMs = Long.parseLong(opts.getOrDefault("delay-ms", "3000"));
        if (topics.containsKey("fifo") && group == null) {
            usage("--fifo needs --message-group");
        }
        List<String> errors = new ArrayList<>();
        long t0 = System.currentTimeMillis();
        Built<Producer> built = buildUntil(() -> PROVIDER.newProducerBuilder().setClientConfiguration(conf)
            .setTopics(topics.values().toArray(new String[0])).build(), deadline, errors);
        int buildAttempts = built.attempts;
        Producer producer = built.client;
        if (producer == null) {
            return obj("ok", false, "buildAttempts", buildAttempts, "errors", errors);
        }
        Map<String, Object> sent = new TreeMap<>();
        Map<String, Object> failedAttempts = new TreeMap<>();
        Map<String, Object> brokers = new TreeMap<>();
        boolean ok = true;
        for (Map.Entry<String, String> e : topics.entrySet()) {
            String kind = e.getKey();
            int done = 0;
            int failed = 0;
            Map<String, Integer> byBroker = new TreeMap<>();
            for (int i = 0; i < count && ok; i++) {
                String body = prefix + "-" + kind + "-" + i;
                while (true) {
                    MessageBuilder b = PROVIDER.newMessageBuilder().setTopic(e.getValue()).setTag("interop")
                        .setKeys(body).setBody(body.getBytes(StandardCharsets.UTF_8));
                    if (kind.equals("fifo")) {
                        b.setMessageGroup(group);
                    } else if (kind.equals("delay")) {
                        b.setDeliveryTimestamp(System.currentTimeMillis() + delayMs);
                    }
                    try {
                        SendReceipt receipt = producer.send(b.build());
                        done++;
                        byBroker.merge(brokerOf(receipt), 1, Integer::sum);
                        break;
                    } catch (Exception ex) {
                        failed++;
                        note(errors, kind + " " + body + ": " + describe(ex));
                    }
                    if (System.currentTimeMillis() > deadline) {
                        ok = false;
                        break;
                    }
                    Thread.sleep(300);
                }
            }
            sent.put(kind, done);
            failedAttempts.put(kind, failed);
            brokers.put(kind, byBroker);
            ok &= done == count;
        }
        long elapsed = System.currentTimeMillis() - t0;
        close(producer);
        return obj("ok", ok, "sent", sent, "failedAttempts", failedAttempts, "brokers", brokers,
            "buildAttempts", buildAttempts, "elapsedMs", elapsed, "errors", errors);
    }

    /** The broker name of a receipt (the SDK's own receipt class keeps the message queue). */
    private static String brokerOf(SendReceipt receipt) {
        if (receipt instanceof SendReceiptImpl) {
            return ((SendReceiptImpl) receipt).getMessageQueue().getBroker().getName();
        }
        return "?";
    }

    // -- receive --------------------------------------------------------------------------------

    /** What simple and push collect: distinct bodies, per topic, delay lateness, FIFO order. */
    private static final class Receiver {
        private final int count;
        private final String[] topics;
        private final Map<String, String> bodies = new ConcurrentHashMap<>(); // body -> topic
        private final Map<String, List<Integer>> groupOrder = new HashMap<>(); // group -> indexes
        private int deliveries;
        private long minDelayLateMs = Long.MAX_VALUE;
        private int delayed;

        Receiver(int count, String[] topics) {
            this.count = count;
            this.topics = topics;
        }

        private Map<String, FilterExpression> subscriptions() {
            Map<String, FilterExpression> m = new LinkedHashMap<>();
            for (String t : topics) {
                m.put(t, FilterExpression.SUB_ALL);
            }
            return m;
        }

        synchronized void record(MessageView m) {
            long now = System.currentTimeMillis();
            deliveries++;
            ByteBuffer buf = m.getBody();
            byte[] raw = new byte[buf.remaining()];
            buf.get(raw);
            String body = new String(raw, StandardCharsets.UTF_8);
            boolean first = bodies.put(body, m.getTopic()) == null;
            if (!first) {
                return;
            }
            if (m.getDeliveryTimestamp().isPresent()) {
                delayed++;
                minDelayLateMs = Math.min(minDelayLateMs, now - m.getDeliveryTimestamp().get());
            }
            if (m.getMessageGroup().isPresent()) {
                int dash = body.lastIndexOf('-');
                groupOrder.computeIfAbsent(m.getMessageGroup().get(), g -> new ArrayList<>())
                    .add(Integer.parseInt(body.substring(dash + 1)));
            }
        }

        synchronized boolean done() {
            return bodies.size() >= count;
        }

        Map<String, Object> simple(ClientConfiguration conf, String group, long deadline) throws Exception {
            long t0 = System.currentTimeMillis();
            List<String> errors = new ArrayList<>();
            SimpleConsumer c = buildUntil(() -> PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(conf)
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
                .setSubscriptionExpressions(subscriptions()).build(), deadline, errors).client;
            if (c == null) {
                return result(false, t0, errors);
            }
            while (!done() && System.currentTimeMillis() < deadline) {
                try {
                    for (MessageView m : c.receive(16, Duration.ofSeconds(30))) {
                        record(m);
                        c.ack(m);
                    }
                } catch (Exception e) {
                    note(errors, "receive: " + describe(e));
                    Thread.sleep(300);
                }
            }
            close(c);
            return result(done(), t0, errors);
        }

        Map<String, Object> push(ClientConfiguration conf, String group, long deadline) throws Exception {
            long t0 = System.currentTimeMillis();
            List<String> errors = new ArrayList<>();
            PushConsumer c = buildUntil(() -> PROVIDER.newPushConsumerBuilder().setClientConfiguration(conf)
                .setConsumerGroup(group).setSubscriptionExpressions(subscriptions()).setMessageListener(m -> {
                    record(m);
                    return ConsumeResult.SUCCESS;
                }).build(), deadline, errors).client;
            if (c == null) {
                return result(false, t0, errors);
            }
            while (!done() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            close(c);
            return result(done(), t0, errors);
        }

        synchronized Map<String, Object> result(boolean ok, long t0, List<String> errors) {
            Map<String, Object> perTopic = new TreeMap<>();
            for (String t : topics) {
                perTopic.put(t, 0);
            }
            for (String t : bodies.values()) {
                perTopic.merge(t, 1, (a, b) -> (Integer) a + (Integer) b);
            }
            Map<String, Object> fifoInOrder = new TreeMap<>();
            for (Map.Entry<String, List<Integer>> e : groupOrder.entrySet()) {
                List<Integer> seen = e.getValue();
                boolean sorted = true;
                for (int i = 1; i < seen.size(); i++) {
                    sorted &= seen.get(i - 1) < seen.get(i);
                }
                fifoInOrder.put(e.getKey(), sorted);
            }
            return obj("ok", ok, "received", bodies.size(), "deliveries", deliveries, "perTopic", perTopic,
                "delayed", delayed, "minDelayLateMs", delayed == 0 ? null : minDelayLateMs,
                "fifoInOrder", fifoInOrder, "elapsedMs", System.currentTimeMillis() - t0, "errors", errors);
        }
    }

    // -- helpers --------------------------------------------------------------------------------

    /** Closes an SDK client with a bounded wait (a dead proxy must not hang the exit). */
    private static void close(AutoCloseable c) {
        Thread t = new Thread(() -> {
            try {
                c.close();
            } catch (Exception ignored) {
                // exiting anyway
            }
        }, "interop-close");
        t.setDaemon(true);
        t.start();
        try {
            t.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Makes a client; may fail while the proxy does not know the topics or groups yet. */
    private interface Builder<T> {
        T build() throws Exception;
    }

    /** A client a builder made (null: the deadline passed first) and the tries it took. */
    private static final class Built<T> {
        T client;
        int attempts;
    }

    /** Builds until it succeeds or the deadline passes, every 500 ms, noting each failure. */
    private static <T> Built<T> buildUntil(Builder<T> builder, long deadline, List<String> errors)
            throws InterruptedException {
        Built<T> built = new Built<>();
        while (built.client == null) {
            built.attempts++;
            try {
                built.client = builder.build();
            } catch (Exception e) {
                note(errors, "build: " + describe(e));
                if (System.currentTimeMillis() > deadline) {
                    return built;
                }
                Thread.sleep(500);
            }
        }
        return built;
    }

    private static void note(List<String> errors, String error) {
        if (errors.size() < 5) {
            errors.add(error);
        }
    }

    private static String describe(Throwable t) {
        String msg = String.valueOf(t.getMessage());
        int nl = msg.indexOf('\n');
        return t.getClass().getSimpleName() + ": " + (nl >= 0 ? msg.substring(0, nl) : msg).trim();
    }

    private static void usage(String message) {
        System.out.println("RESULT " + json(obj("peer", PEER, "ok", false, "error", "usage: " + message)));
        System.out.flush();
        Runtime.getRuntime().halt(2);
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    /** Minimal JSON writer: Map (String keys), Iterable, String, Number, Boolean, null. */
    private static String json(Object v) {
        if (v == null || v instanceof Boolean || v instanceof Number) {
            return String.valueOf(v);
        }
        StringBuilder sb = new StringBuilder();
        if (v instanceof Map) {
            sb.append('{');
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                sb.append(sb.length() > 1 ? "," : "").append(json(String.valueOf(e.getKey()))).append(':')
                    .append(json(e.getValue()));
            }
            return sb.append('}').toString();
        }
        if (v instanceof Iterable) {
            sb.append('[');
            for (Object o : (Iterable<?>) v) {
                sb.append(sb.length() > 1 ? "," : "").append(json(o));
            }
            return sb.append(']').toString();
        }
        sb.append('"');
        for (char c : String.valueOf(v).toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
