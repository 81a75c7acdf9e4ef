package rmqinterop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.TreeSet;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Long-running producer for failover scenarios: sends messages one after another until told to
 * stop, logging every attempt, so that the runner can see when sends fail and when they succeed
 * again, and later compare what was acknowledged with what a consumer reads.
 *
 *   Sender --namesrv 'a;b' --topic T [--prefix P] [--interval-ms 50] [--poll-ms 2000]
 *          [--max-s 300] [--retry-ms 200] [--group G]
 *
 * Message i has key and body "P-i". Each message is sent (DefaultMQProducer.send, sync, 3 s
 * timeout, 2 internal retries) until it succeeds, the same Message object again after a failure
 * (so it keeps its client message id), with --retry-ms between attempts; then the next one after
 * --interval-ms. It stops when stdin reaches end-of-file or receives a line (the runner's
 * "stop"), or after --max-s: the message then being retried is left unacknowledged. The route is
 * refreshed from the NameServer every --poll-ms (pollNameServerInterval; the client default is
 * 30 s).
 *
 * One line per attempt on stdout, flushed:
 *   SEND i OK epochMs brokerName queueId queueOffset msgId
 *   SEND i FAIL epochMs error text
 * then RESULT {"ok":true,"keys":n,"acked":k,"failedAttempts":f,"brokers":[..],"lastError":..}
 * (ok: the loop ran; whether enough sends succeeded is the runner's decision).
 */
public final class Sender {
    private static final String PEER = "sender";

    private static volatile boolean stop;

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
        String group = args.get("group", "interop_sender_" + ProcessHandle.current().pid());
        String prefix = args.get("prefix", "m");
        int intervalMs = args.getInt("interval-ms", 50);
        int retryMs = args.getInt("retry-ms", 200);
        long deadline = System.currentTimeMillis() + 1000L * args.getInt("max-s", 300);

        Thread watcher = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                in.readLine();
            } catch (Exception ignored) {
                // end of input either way
            }
            stop = true;
        }, "sender-stdin");
        watcher.setDaemon(true);
        watcher.start();

        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("interop-sender-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(2);
        producer.setPollNameServerInterval(args.getInt("poll-ms", 2000));

        int keys = 0;
        int acked = 0;
        int failedAttempts = 0;
        String lastError = null;
        TreeSet<String> brokers = new TreeSet<>();
        int exit;
        try {
            producer.start();
            for (int i = 0; !stop && System.currentTimeMillis() < deadline; i++) {
                String key = prefix + "-" + i;
                Message msg = new Message(topic, "interop", key, key.getBytes(StandardCharsets.UTF_8));
                keys++;
                while (true) {
                    String line;
                    boolean ok = false;
                    try {
                        SendResult r = producer.send(msg);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            ok = true;
                            line = "SEND " + i + " OK " + System.currentTimeMillis() + " "
                                + r.getMessageQueue().getBrokerName() + " " + r.getMessageQueue().getQueueId() + " "
                                + r.getQueueOffset() + " " + r.getMsgId();
                            brokers.add(r.getMessageQueue().getBrokerName());
                        } else {
                            lastError = "send status " + r.getSendStatus();
                            line = "SEND " + i + " FAIL " + System.currentTimeMillis() + " " + lastError;
                        }
                    } catch (Exception e) {
                        lastError = Util.describe(e);
                        line = "SEND " + i + " FAIL " + System.currentTimeMillis() + " " + lastError;
                    }
                    System.out.println(line);
                    System.out.flush();
                    if (ok) {
                        acked++;
                        break;
                    }
                    failedAttempts++;
                    if (stop || System.currentTimeMillis() >= deadline) {
                        break;
                    }
                    Thread.sleep(retryMs);
                }
                if (intervalMs > 0 && !stop) {
                    Thread.sleep(intervalMs);
                }
            }
            exit = Util.emit(PEER, Util.obj()
                .with("ok", true)
                .with("topic", topic)
                .with("keys", keys)
                .with("acked", acked)
                .with("failedAttempts", failedAttempts)
                .with("brokers", brokers)
                .with("lastError", lastError));
        } catch (Exception e) {
            exit = Util.emit(PEER, Util.failure(e).with("keys", keys).with("acked", acked));
        }
        Util.exit(exit, producer::shutdown);
    }
}
