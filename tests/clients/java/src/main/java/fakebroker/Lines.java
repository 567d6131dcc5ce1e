package fakebroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;

/**
 * The line protocol JavaClient, GroupScenarios and TxnScenarios share with tests/clients/driver.py:
 * one JSON object per stdout line, and (for the long-running drivers) one command per stdin line,
 * {@code ID COMMAND key=value...}, answered by exactly one {@code {"type":"reply","id":ID,...}}
 * line ("error" when the command itself failed). Plus the small helpers all three use.
 */
final class Lines {
    private static final PrintStream OUT = System.out;
    private static final long T0 = System.nanoTime();

    private Lines() {
    }

    /** A command handler: the reply's fields for command {@code cmd} with arguments {@code a}, or
     *  null when it does not know the command. */
    interface Commands {
        Map<String, Object> run(String cmd, Map<String, String> a) throws Exception;
    }

    /** Something a command does that may throw. */
    interface Step {
        void run() throws Exception;
    }

    /**
     * Prints the version line, then answers stdin's commands with the first of {@code handlers}
     * that knows each until "exit" (answered too) or the end of stdin, and exits the JVM with status 0.
     */
    static void serve(Commands... handlers) throws Exception {
        emit(obj("type", "version", "kafka_clients", kafkaVersion(), "java", System.getProperty("java.version")));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            String cmd = parts[1];
            Map<String, String> a = new HashMap<>();
            for (int i = 2; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                a.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            Map<String, Object> reply;
            try {
                reply = null;
                for (Commands handler : handlers) {
                    reply = handler.run(cmd, a);
                    if (reply != null) {
                        break;
                    }
                }
                if (reply == null) {
                    throw new IllegalArgumentException("unknown command " + cmd);
                }
            } catch (Throwable t) {
                t.printStackTrace();
                reply = obj("error", describe(t));
            }
            Map<String, Object> out = obj("type", "reply", "id", Integer.parseInt(parts[0]));
            out.putAll(reply);
            emit(out);
            if (cmd.equals("exit")) {
                break;
            }
        }
        OUT.flush();
        System.exit(0);
    }

    // -- output -----------------------------------------------------------------------------

    /** One JSON line with "t", the milliseconds since this class was loaded, first. */
    /** One scenario of a one-shot program: the bootstrap servers, the scenario's name and its key=value arguments. */
    interface Scenario {
        void run(String bootstrap, String name, Map<String, String> a) throws Exception;
    }

    /**
     * The main of a one-shot scenario program ({@code BOOTSTRAP SCENARIO key=value...}): a version line,
     * the scenario, {@code {"type":"end"}}; any failure a {@code {"type":"error",...}} line and exit 1.
     */
    static void runScenario(String[] args, Scenario scenario) {
        if (args.length < 2) {
            System.err.println("usage: BOOTSTRAP SCENARIO key=value...");
            System.exit(2);
        }
        Map<String, String> a = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            a.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        int status = 0;
        try {
            emit(obj("type", "version", "kafka_clients", kafkaVersion(), "java", System.getProperty("java.version")));
            scenario.run(args[0], args[1], a);
            emit(obj("type", "end"));
        } catch (Throwable t) {
            emit(obj("type", "error", "error", t.getClass().getName(), "message", String.valueOf(t.getMessage()),
                    "trace", describe(t)));
            t.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }

    static synchronized void emit(Map<String, Object> m) {
        Map<String, Object> withTime = obj("t", (System.nanoTime() - T0) / 1_000_000);
        withTime.putAll(m);
        write(withTime);
    }

    /** One JSON line, as it is. */
    static synchronized void write(Map<String, Object> m) {
        OUT.println(toJson(m));
        OUT.flush();
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static String toJson(Object v) {
        StringBuilder sb = new StringBuilder();
        json(sb, v);
        return sb.toString();
    }

    private static void json(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            quote(sb, (String) v);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map) {
            sb.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                sb.append(sep);
                sep = ",";
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Iterable) {
            sb.append('[');
            String sep = "";
            for (Object o : (Iterable<?>) v) {
                sb.append(sep);
                sep = ",";
                json(sb, o);
            }
            sb.append(']');
        } else {
            quote(sb, String.valueOf(v));
        }
    }

    private static void quote(StringBuilder sb, String s) {
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

    /** An Admin client: request.timeout.ms 10 s, default.api.timeout.ms 15 s. */
    static Admin admin(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        return Admin.create(p);
    }

    // -- helpers ----------------------------------------------------------------------------

    /** Polls {@code done} every 50 ms until it holds; IllegalStateException after {@code timeoutMs}. */
    static void waitFor(String what, int timeoutMs, BooleanSupplier done) {
        waitFor(what, timeoutMs, done, 50);
    }

    static void waitFor(String what, int timeoutMs, BooleanSupplier done, int stepMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            try {
                Thread.sleep(stepMs);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** The kafka-clients version on the class path (kafka/kafka-version.properties in its jar). */
    static String kafkaVersion() throws java.io.IOException {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            props.load(in);
        }
        return props.getProperty("version", "unknown");
    }

    /** The simple name of the exception a step threw (its cause for an ExecutionException), or null. */
    static String errorOf(Step step) {
        try {
            step.run();
            return null;
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
    }

    static int num(Map<String, String> a, String key, int dflt) {
        return a.containsKey(key) ? Integer.parseInt(a.get(key)) : dflt;
    }

    static List<String> list(String csv) {
        return Arrays.asList(csv.split(","));
    }

    static List<Integer> partitions(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        Collections.sort(out);
        return out;
    }

    /** The stack trace, cut to 3000 characters. */
    static String describe(Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        String trace = sw.toString();
        return trace.length() > 3000 ? trace.substring(0, 3000) : trace;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
