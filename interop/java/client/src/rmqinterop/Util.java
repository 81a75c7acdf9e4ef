package rmqinterop;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.MixAll;

/**
 * Shared helpers of the interop peers: argument parsing, the single result line, error codes.
 *
 * Every peer prints exactly one line starting with "RESULT " followed by a JSON object
 * (always with "ok" and "peer") to stdout and exits 0 when ok, 1 when not, 2 on bad usage.
 * This source compiles against both the 4.9.x and the 5.x client (no version-specific imports).
 */
final class Util {
    private Util() {
    }

    /** "--key value" pairs and "--flag" switches (value "true"); anything else is positional. */
    static final class Args {
        final Map<String, String> opts = new LinkedHashMap<>();
        final List<String> positional = new ArrayList<>();

        Args(String[] argv) {
            for (int i = 0; i < argv.length; i++) {
                String a = argv[i];
                if (a.startsWith("--")) {
                    String key = a.substring(2);
                    int eq = key.indexOf('=');
                    if (eq >= 0) {
                        opts.put(key.substring(0, eq), key.substring(eq + 1));
                    } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                        opts.put(key, argv[++i]);
                    } else {
                        opts.put(key, "true");
                    }
                } else {
                    positional.add(a);
                }
            }
        }

        String get(String key, String dflt) {
            return opts.getOrDefault(key, dflt);
        }

        String require(String key) {
            String v = opts.get(key);
            if (v == null || v.isEmpty()) {
                throw new IllegalArgumentException("missing --" + key);
            }
            return v;
        }

        int getInt(String key, int dflt) {
            String v = opts.get(key);
            return v == null ? dflt : Integer.parseInt(v);
        }

        boolean flag(String key) {
            return "true".equals(opts.get(key));
        }
    }

    /**
     * The NameServer list of --namesrv, or null with --address-server: then the client is to find
     * its NameServers through the HTTP address server named by -Drocketmq.namesrv.domain (it asks
     * http://DOMAIN/rocketmq/nsaddr, or nsaddr-UNIT?nofix=1 with --unit-name), which it does only
     * when nothing else names one: no setNamesrvAddr, no -Drocketmq.namesrv.addr, no NAMESRV_ADDR
     * in the environment. Checked here, so a peer cannot pass by way of another source.
     */
    static String namesrv(Args args) {
        if (!args.flag("address-server")) {
            return args.require("namesrv");
        }
        if (args.opts.containsKey("namesrv")) {
            throw new IllegalArgumentException("--address-server excludes --namesrv");
        }
        String domain = System.getProperty("rocketmq.namesrv.domain");
        if (domain == null || domain.isEmpty()) {
            throw new IllegalArgumentException("--address-server needs -Drocketmq.namesrv.domain=HOST:PORT");
        }
        if (System.getProperty("rocketmq.namesrv.addr") != null || System.getenv("NAMESRV_ADDR") != null) {
            throw new IllegalArgumentException("--address-server: rocketmq.namesrv.addr or NAMESRV_ADDR is set");
        }
        return null;
    }

    /**
     * What --address-server peers add to their result: the address server URL the client asks
     * (MixAll.getWSAddr(), before the unit suffix) and the NameServer list its client instance
     * holds (for a --namesrv peer that is the list it was given).
     */
    static void addressServer(Obj result, MQClientInstance factory) {
        result.with("addressServer", MixAll.getWSAddr());
        if (factory != null) {
            result.with("nameServers", factory.getMQClientAPIImpl().getNameServerAddressList());
            result.with("fetchUrl", fetchUrl(factory.getMQClientAPIImpl()));
        }
    }

    /**
     * The URL the client's address fetcher asks (MQClientAPIImpl.topAddressing, a TopAddressing
     * in 4.9.x, a DefaultTopAddressing in 5.x, both with the private fields wsAddr and unitName),
     * built as its fetchNSAddr() does: wsAddr, plus "-UNIT?nofix=1" with a unit name. Read by
     * reflection; null if that fails.
     */
    private static String fetchUrl(Object api) {
        try {
            java.lang.reflect.Field f = api.getClass().getDeclaredField("topAddressing");
            f.setAccessible(true);
            Object top = f.get(api);
            String ws = (String) field(top, "wsAddr");
            String unit = (String) field(top, "unitName");
            return unit == null || unit.trim().isEmpty() ? ws : ws + "-" + unit + "?nofix=1";
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static Object field(Object o, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    /** Ordered JSON object builder; put() returns this for chaining. */
    static final class Obj extends LinkedHashMap<String, Object> {
        Obj with(String key, Object value) {
            put(key, value);
            return this;
        }
    }

    static Obj obj() {
        return new Obj();
    }

    /** Minimal JSON writer for Map (String keys), Iterable, String, Number, Boolean and null. */
    static String json(Object v) {
        StringBuilder sb = new StringBuilder();
        writeJson(sb, v);
        return sb.toString();
    }

    private static void writeJson(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
            sb.append(v);
        } else if (v instanceof Number) {
            sb.append(((Number) v).doubleValue());
        } else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                writeString(sb, String.valueOf(e.getKey()));
                sb.append(':');
                writeJson(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Iterable) {
            sb.append('[');
            boolean first = true;
            for (Object o : (Iterable<?>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                writeJson(sb, o);
            }
            sb.append(']');
        } else {
            writeString(sb, String.valueOf(v));
        }
    }

    private static void writeString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    /** RocketMQ response code carried by t or one of its causes; -1 when there is none. */
    static int errorCode(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof MQClientException && ((MQClientException) c).getResponseCode() != -1) {
                return ((MQClientException) c).getResponseCode();
            }
            if (c instanceof MQBrokerException) {
                return ((MQBrokerException) c).getResponseCode();
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return -1;
    }

    /** One-line description of t (class and message, first line only). */
    static String describe(Throwable t) {
        String msg = String.valueOf(t.getMessage());
        int nl = msg.indexOf('\n');
        if (nl >= 0) {
            msg = msg.substring(0, nl);
        }
        return t.getClass().getSimpleName() + ": " + msg.trim();
    }

    /** Result object of a failed call: ok=false, code, error (stack trace to stderr). */
    static Obj failure(Throwable t) {
        t.printStackTrace();
        return obj().with("ok", false).with("code", errorCode(t)).with("error", describe(t));
    }

    /** Prints the result line and returns the process exit code for it. */
    static int emit(String peer, Map<String, Object> result) {
        Obj line = obj().with("peer", peer);
        line.putAll(result);
        System.out.println("RESULT " + json(line));
        System.out.flush();
        return Boolean.TRUE.equals(result.get("ok")) ? 0 : 1;
    }

    /** Runs cleanup with a bounded wait (a dead peer must not hang the exit), then exits. */
    static void exit(int code, Runnable cleanup) {
        if (cleanup != null) {
            Thread t = new Thread(cleanup, "interop-cleanup");
            t.setDaemon(true);
            t.start();
            try {
                t.join(5000);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }
        System.exit(code);
    }

    /** Usage error: prints the result line with the message and exits 2. */
    static void usage(String peer, String message) {
        emit(peer, obj().with("ok", false).with("error", "usage: " + message));
        System.exit(2);
    }
}
