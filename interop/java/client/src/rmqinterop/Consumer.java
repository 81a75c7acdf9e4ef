package rmqinterop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.ServiceState;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Push consumer (clustering, CONSUME_FROM_FIRST_OFFSET) that waits for N distinct messages.
 *
 *   Consumer --namesrv 'a;b' --topic T --group G [--count N] [--prefix P] [--timeout-s S]
 *            [--idle-s S] [--dump PATH]
 *   Consumer --address-server [--unit-name U] --topic T ...   (with -Drocketmq.namesrv.domain=H:P)
 *
 * Counts distinct bodies starting with "P-" (what Producer sends). start() throwing because the
 * NameServer picked first is down is tolerated (see below). Route polling and
 * rebalancing are shortened (pollNameServerInterval, -Drocketmq.client.rebalance.waitInterval
 * set by the runner) so a topic that appears a moment after start is picked up quickly.
 * With --address-server the client gets its NameServers from the HTTP address server (see
 * Util.namesrv). --idle-s: also stop once a message has arrived and nothing new for S seconds
 * (for a run that may have lost messages: then ok=false sooner). --dump: every delivery as a line
 * "body TAB queueId TAB queueOffset TAB msgId" into PATH (written when the consumer stops), so the
 * runner can find lost and duplicated messages. Result: {"ok":..,"expected":N,"received":k,
 * "deliveries":d,"elapsedMs":..,"addressServer":..,"nameServers":[..]}.
 */
public final class Consumer {
    private static final String PEER = "consumer";
    /** Consumers made until one starts (see main). */
    private static final int START_ATTEMPTS = 12;

    public static void main(String[] argv) throws InterruptedException {
        Util.Args args = new Util.Args(argv);
        String namesrv;
        String topic;
        String group;
        int count;
        try {
            namesrv = Util.namesrv(args);
            topic = args.require("topic");
            group = args.require("group");
            count = args.getInt("count", 10);
        } catch (RuntimeException e) {
            Util.usage(PEER, e.getMessage());
            return;
        }
        String unitName = args.get("unit-name", null);
        String prefix = args.get("prefix", "m") + "-";
        long start = System.currentTimeMillis();
        long deadline = start + 1000L * args.getInt("timeout-s", 60);
        long idleMs = 1000L * args.getInt("idle-s", 0);
        String dumpPath = args.get("dump", null);

        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger deliveries = new AtomicInteger();
        AtomicLong lastNew = new AtomicLong(0);
        List<String> dump = Collections.synchronizedList(new ArrayList<>());
        MessageListenerConcurrently listener = (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                deliveries.incrementAndGet();
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (dumpPath != null) {
                    dump.add(body + "\t" + m.getQueueId() + "\t" + m.getQueueOffset() + "\t" + m.getMsgId());
                }
                if (body.startsWith(prefix) && seen.add(body)) {
                    lastNew.set(System.currentTimeMillis());
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };

        int exit;
        DefaultMQPushConsumer consumer = null;
        int attempts = 0;
        String startError = null;
        try {
            // start() throws when the NameServer the client picked first is down: the route
            // lookup inside start() fails after the consumer is already RUNNING. Its periodic
            // route polling then moves on to the next NameServer, so a RUNNING consumer is kept;
            // one that did not get that far is replaced (bounded). Each new client picks its
            // first NameServer at random: with one of two down, 5 attempts all picked it in 1
            // run of 32 (a CI failure); 12 leave 1 in 4,096.
            while (consumer == null) {
                attempts++;
                DefaultMQPushConsumer c = newConsumer(namesrv, unitName, topic, group, attempts, listener);
                try {
                    c.start();
                    consumer = c;
                } catch (Exception e) {
                    startError = Util.describe(e);
                    System.err.println("consumer start attempt " + attempts + " threw: " + startError);
                    e.printStackTrace();
                    if (c.getDefaultMQPushConsumerImpl().getServiceState() == ServiceState.RUNNING) {
                        consumer = c;
                    } else if (attempts >= START_ATTEMPTS || System.currentTimeMillis() > deadline) {
                        throw e;
                    } else {
                        Thread.sleep(500);
                    }
                }
            }
            while (seen.size() < count && System.currentTimeMillis() < deadline) {
                long last = lastNew.get();
                if (idleMs > 0 && last > 0 && System.currentTimeMillis() - last > idleMs) {
                    break;
                }
                Thread.sleep(200);
            }
            int got = seen.size();
            if (dumpPath != null) {
                synchronized (dump) {
                    Files.write(Paths.get(dumpPath), dump, StandardCharsets.UTF_8);
                }
            }
            Util.Obj r = Util.obj()
                .with("ok", got >= count)
                .with("topic", topic)
                .with("expected", count)
                .with("received", got)
                .with("deliveries", deliveries.get())
                .with("startAttempts", attempts)
                .with("startError", startError)
                .with("elapsedMs", System.currentTimeMillis() - start);
            if (got < count) {
                r.with("error", "timed out waiting for messages");
                TreeSet<String> missing = new TreeSet<>();
                for (int i = 0; i < count && missing.size() < 10; i++) {
                    if (!seen.contains(prefix + i)) {
                        missing.add(prefix + i);
                    }
                }
                r.with("missingSample", missing);
            }
            Util.addressServer(r, consumer.getDefaultMQPushConsumerImpl().getmQClientFactory());
            exit = Util.emit(PEER, r);
        } catch (Exception e) {
            exit = Util.emit(PEER, Util.failure(e).with("received", seen.size()).with("startAttempts", attempts));
        }
        DefaultMQPushConsumer started = consumer;
        Util.exit(exit, started == null ? null : started::shutdown);
    }

    private static DefaultMQPushConsumer newConsumer(String namesrv, String unitName, String topic, String group,
        int attempt, MessageListenerConcurrently listener) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        if (namesrv != null) {
            c.setNamesrvAddr(namesrv);
        } else if (c.getNamesrvAddr() != null) {
            throw new IllegalStateException("--address-server: the client has namesrvAddr " + c.getNamesrvAddr());
        }
        if (unitName != null) {
            c.setUnitName(unitName);
        }
        c.setInstanceName("interop-" + ProcessHandle.current().pid() + "-" + attempt);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(2000);
        c.registerMessageListener(listener);
        c.subscribe(topic, "*");
        return c;
    }
}
