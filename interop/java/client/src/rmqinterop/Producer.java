package rmqinterop;

import java.nio.charset.StandardCharsets;
import java.util.TreeSet;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends N messages synchronously to a topic, finding brokers through the given NameServers.
 *
 *   Producer --namesrv 'host:port[;host:port]' --topic T [--count N] [--group G] [--prefix P]
 *            [--first I] [--timeout-s S]
 *   Producer --address-server [--unit-name U] --topic T ...   (with -Drocketmq.namesrv.domain=H:P)
 *
 * Message i (I <= i < I+N) has key and body "P-i", so that Consumer can count distinct messages.
 * A send is retried (new attempt, new route lookup) until --timeout-s runs out, so a topic
 * that the broker auto-creates on first send, or a NameServer that just went away, is
 * tolerated. With --address-server the client gets its NameServers from the HTTP address
 * server instead (see Util.namesrv). Result: {"ok":..,"sent":N,"succeeded":k,"brokers":[..],
 * "lastError":..,"addressServer":..,"nameServers":[..]}.
 */
public final class Producer {
    private static final String PEER = "producer";

    public static void main(String[] argv) {
        Util.Args args = new Util.Args(argv);
        String namesrv;
        String topic;
        int count;
        try {
            namesrv = Util.namesrv(args);
            topic = args.require("topic");
            count = args.getInt("count", 10);
        } catch (RuntimeException e) {
            Util.usage(PEER, e.getMessage());
            return;
        }
        String group = args.get("group", "interop_producer_" + ProcessHandle.current().pid());
        String prefix = args.get("prefix", "m");
        int first = args.getInt("first", 0);
        long deadline = System.currentTimeMillis() + 1000L * args.getInt("timeout-s", 60);

        DefaultMQProducer producer = new DefaultMQProducer(group);
        if (namesrv != null) {
            producer.setNamesrvAddr(namesrv);
        } else if (producer.getNamesrvAddr() != null) {
            Util.usage(PEER, "--address-server: the client has namesrvAddr " + producer.getNamesrvAddr());
        }
        if (args.opts.containsKey("unit-name")) {
            producer.setUnitName(args.require("unit-name"));
        }
        producer.setInstanceName("interop-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(2);

        int succeeded = 0;
        String lastError = null;
        TreeSet<String> brokers = new TreeSet<>();
        int exit;
        try {
            producer.start();
            for (int i = 0; i < count; i++) {
                String key = prefix + "-" + (first + i);
                Message msg = new Message(topic, "interop", key, key.getBytes(StandardCharsets.UTF_8));
                while (true) {
                    try {
                        SendResult r = producer.send(msg);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            succeeded++;
                            brokers.add(r.getMessageQueue().getBrokerName());
                            break;
                        }
                        lastError = "send status " + r.getSendStatus();
                    } catch (Exception e) {
                        lastError = Util.describe(e);
                    }
                    if (System.currentTimeMillis() > deadline) {
                        break;
                    }
                    Thread.sleep(500);
                }
                if (System.currentTimeMillis() > deadline && succeeded < i + 1) {
                    break;
                }
            }
            Util.Obj r = Util.obj()
                .with("ok", succeeded == count)
                .with("topic", topic)
                .with("sent", count)
                .with("succeeded", succeeded)
                .with("brokers", brokers)
                .with("lastError", lastError);
            Util.addressServer(r, producer.getDefaultMQProducerImpl().getMqClientFactory());
            exit = Util.emit(PEER, r);
        } catch (Exception e) {
            Util.Obj r = Util.failure(e).with("succeeded", succeeded);
            exit = Util.emit(PEER, r);
        }
        Util.exit(exit, producer::shutdown);
    }
}
