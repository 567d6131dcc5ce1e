package fakebroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Several KafkaConsumers of one group in one JVM (a thread each), driven by commands on stdin,
 * for tests/clients/test_java_groups.py.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.GroupScenarios BOOTSTRAP
 * </pre>
 *
 * Each stdin line is {@code ID COMMAND key=value...}; each gets exactly one JSON reply line
 * {@code {"type":"reply","id":ID,...}} (with "error" when it failed). What the consumers do is
 * reported as it happens in JSON lines of other types (assigned, revoked, lost, commit_failed,
 * stall_start, stall_end, closed). Records are produced as key "key-I", value "value-I" on
 * partition I % partitions. Consumers commit synchronously after every non-empty poll
 * (enable.auto.commit=false), so "take over from commits" is exact. Every wait is bounded.
 */
public final class GroupScenarios {
    private static final PrintStream OUT = System.out;
    private static final long T0 = System.nanoTime();
    private static final Duration API_TIMEOUT = Duration.ofSeconds(15);

    private final String bootstrap;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    private final List<Object[]> consumed = Collections.synchronizedList(new ArrayList<>());
    private KafkaProducer<byte[], byte[]> producer;
    private Admin admin;
    private volatile int produced;
    private volatile Throwable streamError;
    private Thread stream;

    private GroupScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        GroupScenarios driver = new GroupScenarios(args[0]);
        emit(obj("type", "version", "kafka_clients", kafkaVersion(),
                "java", System.getProperty("java.version")));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int status = 0;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            String id = parts[0];
            String cmd = parts[1];
            Map<String, String> a = new HashMap<>();
            for (int i = 2; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                a.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            Map<String, Object> reply;
            try {
                reply = driver.run(cmd, a);
            } catch (Throwable t) {
                t.printStackTrace();
                reply = obj("error", describe(t));
            }
            Map<String, Object> out = obj("type", "reply", "id", Integer.parseInt(id));
            out.putAll(reply);
            emit(out);
            if (cmd.equals("exit")) {
                break;
            }
        }
        OUT.flush();
        System.exit(status);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "start":
                return start(a);
            case "waitAssigned":
                return waitAssigned(list(a.get("names")), a.get("topic"), num(a, "partitions", 6), num(a, "timeoutMs", 20000),
                        !"false".equals(a.get("sameGeneration")));
            case "produce":
                return produce(a.get("topic"), num(a, "first", 0), num(a, "n", 0), num(a, "partitions", 6));
            case "produceStream":
                return produceStream(a.get("topic"), num(a, "first", 0), num(a, "n", 0), num(a, "partitions", 6),
                        num(a, "chunk", 6), num(a, "intervalMs", 20));
            case "waitProduced":
                waitFor("streamed records", num(a, "timeoutMs", 30000), () -> produced >= num(a, "count", 0) || streamError != null);
                checkStream();
                return obj("produced", produced);
            case "waitStream":
                stream.join(num(a, "timeoutMs", 30000));
                checkStream();
                if (stream.isAlive()) {
                    throw new IllegalStateException("stream did not finish");
                }
                return obj("produced", produced);
            case "waitConsumed":
                return waitConsumed(num(a, "total", 0), num(a, "timeoutMs", 20000));
            case "waitCommitted":
                return waitCommitted(a.get("group"), a.get("topic"), num(a, "timeoutMs", 20000));
            case "stall":
                members.get(a.get("name")).stallMs = num(a, "ms", 0);
                return obj();
            case "close":
                return close(a.get("name"));
            case "consumed":
                return obj("records", consumedRecords());
            case "listGroups":
                return listGroups();
            case "describeGroup":
                return describeGroup(a.get("group"));
            case "deleteGroup":
                return deleteGroup(a.get("group"));
            case "fetchOffsets":
                return fetchOffsets(a.get("group"));
            case "exit":
                for (String name : new ArrayList<>(members.keySet())) {
                    if (members.get(name).thread.isAlive()) {
                        close(name);
                    }
                }
                if (producer != null) {
                    producer.close(Duration.ofSeconds(5));
                }
                if (admin != null) {
                    admin.close(Duration.ofSeconds(5));
                }
                return obj();
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // -- consumers --------------------------------------------------------------------------

    /** One KafkaConsumer on its own thread: poll, record, commitSync, repeat. */
    private final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        String pattern; // a server-side (RE2/J) regex subscription instead of the topic, with group.protocol=consumer
        final Thread thread;
        final Set<TopicPartition> owned = Collections.synchronizedSet(new TreeSet<>((x, y) -> Integer.compare(x.partition(), y.partition())));
        volatile boolean running = true;
        volatile boolean assignedOnce;
        volatile int stallMs;
        volatile String memberId = "";
        volatile int generation = -1;
        volatile Throwable failure;

        Member(String name, Properties props, String topic) {
            this.name = name;
            this.topic = topic;
            this.consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.thread = new Thread(this, "consumer-" + name);
            this.thread.setDaemon(true);
        }

        @Override
        public void run() {
            try {
                if (pattern != null) {
                    consumer.subscribe(new SubscriptionPattern(pattern), this);
                } else {
                    consumer.subscribe(List.of(topic), this);
                }
                while (running) {
                    int stall = stallMs;
                    if (stall > 0) {
                        stallMs = 0;
                        emit(obj("type", "stall_start", "name", name, "ms", stall));
                        Thread.sleep(stall);
                        emit(obj("type", "stall_end", "name", name));
                    }
                    ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(100));
                    } catch (WakeupException e) {
                        continue;
                    }
                    if (records.isEmpty()) {
                        continue;
                    }
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        consumed.add(new Object[] {name, r.partition(), r.offset(), new String(r.key(), StandardCharsets.UTF_8)});
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    try {
                        consumer.commitSync(next, API_TIMEOUT);
                    } catch (CommitFailedException | RebalanceInProgressException e) {
                        emit(obj("type", "commit_failed", "name", name, "error", e.getClass().getSimpleName(),
                                "partitions", partitions(next.keySet())));
                    }
                }
            } catch (Throwable t) {
                failure = t;
                emit(obj("type", "consumer_failed", "name", name, "error", describe(t)));
                t.printStackTrace();
            } finally {
                try {
                    consumer.close(Duration.ofSeconds(10));
                } catch (Throwable t) {
                    emit(obj("type", "close_failed", "name", name, "error", describe(t)));
                }
                emit(obj("type", "closed", "name", name));
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            emit(obj("type", "revoked", "name", name, "partitions", partitions(partitions)));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            owned.addAll(partitions);
            memberId = consumer.groupMetadata().memberId();
            generation = consumer.groupMetadata().generationId();
            assignedOnce = true;
            emit(obj("type", "assigned", "name", name, "partitions", partitions(partitions), "owned", partitions(owned),
                    "memberId", memberId, "generation", generation));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            emit(obj("type", "lost", "name", name, "partitions", partitions(partitions)));
        }
    }

    private Map<String, Object> start(Map<String, String> a) {
        String name = a.get("name");
        if (members.containsKey(name) && members.get(name).thread.isAlive()) {
            throw new IllegalStateException("consumer " + name + " is running");
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "fakebroker-java-" + name);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        String protocol = a.getOrDefault("protocol", "classic");
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) { // with KIP-848's protocol the broker owns these
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.getOrDefault("session", "6000"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, a.getOrDefault("heartbeat", "500"));
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, a.getOrDefault("maxPoll", "10000"));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, a.getOrDefault("requestTimeout", "10000")); // small: a black-holed request times out soon
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        p.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        p.put(ConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        if (a.containsKey("instance")) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, a.get("instance"));
        }
        Member m = new Member(name, p, a.get("topic"));
        m.pattern = a.get("pattern");
        members.put(name, m);
        m.thread.start();
        return obj();
    }

    /** Until the named consumers (all running, all in the same generation unless sameGeneration is
     *  false, each with at least one partition) own every partition of the topic exactly once. With
     *  group.protocol=consumer a member's epoch can move without a callback, so the generations the
     *  callbacks saw may differ. */
    private Map<String, Object> waitAssigned(List<String> names, String topic, int partitions, int timeoutMs,
            boolean sameGeneration) {
        waitFor("assignment of " + topic + " over " + names, timeoutMs, () -> {
            List<Integer> all = new ArrayList<>();
            Set<Integer> generations = new HashSet<>();
            for (String n : names) {
                Member m = members.get(n);
                if (m == null || !m.assignedOnce || !m.thread.isAlive()) {
                    return false;
                }
                synchronized (m.owned) {
                    if (m.owned.isEmpty()) {
                        return false; // every named member has a share (or it is not in this generation)
                    }
                    for (TopicPartition tp : m.owned) {
                        all.add(tp.partition());
                    }
                }
                generations.add(m.generation);
            }
            if (sameGeneration && generations.size() != 1) {
                return false;
            }
            Collections.sort(all);
            for (int i = 0; i < all.size(); i++) {
                if (all.get(i) != i) {
                    return false;
                }
            }
            return all.size() == partitions;
        });
        Map<String, Object> assignments = new TreeMap<>();
        Map<String, Object> ids = new TreeMap<>();
        Map<String, Object> generations = new TreeMap<>();
        for (String n : names) {
            Member m = members.get(n);
            synchronized (m.owned) {
                assignments.put(n, partitions(m.owned));
            }
            ids.put(n, m.memberId);
            generations.put(n, m.generation);
        }
        return obj("assignments", assignments, "memberIds", ids, "generations", generations);
    }

    private Map<String, Object> close(String name) throws InterruptedException {
        Member m = members.get(name);
        m.running = false;
        m.consumer.wakeup();
        m.thread.join(20000);
        if (m.thread.isAlive()) {
            throw new IllegalStateException("consumer " + name + " did not close");
        }
        return obj("memberId", m.memberId);
    }

    private Map<String, Object> waitConsumed(int total, int timeoutMs) {
        waitFor(total + " distinct records consumed", timeoutMs, () -> {
            Set<String> keys = new HashSet<>();
            synchronized (consumed) {
                for (Object[] r : consumed) {
                    keys.add((String) r[3]);
                }
            }
            return keys.size() >= total;
        });
        return obj("consumed", consumed.size());
    }

    private List<Object> consumedRecords() {
        List<Object> out = new ArrayList<>();
        synchronized (consumed) {
            for (Object[] r : consumed) {
                out.add(Arrays.asList(r));
            }
        }
        return out;
    }

    // -- producing --------------------------------------------------------------------------

    private KafkaProducer<byte[], byte[]> producer() {
        if (producer == null) {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.LINGER_MS_CONFIG, "2");
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
            p.put(ProducerConfig.CLIENT_ID_CONFIG, "fakebroker-java-producer");
            producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        }
        return producer;
    }

    private void produceRange(String topic, int from, int n, int partitions) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            futures.add(producer().send(new ProducerRecord<>(topic, i % partitions, utf8("key-" + i), utf8("value-" + i))));
        }
        producer().flush();
        for (Future<RecordMetadata> f : futures) {
            f.get(20, TimeUnit.SECONDS);
        }
    }

    private Map<String, Object> produce(String topic, int from, int n, int partitions) throws Exception {
        produceRange(topic, from, n, partitions);
        return obj("produced", n);
    }

    private Map<String, Object> produceStream(String topic, int from, int n, int partitions, int chunk, int intervalMs) {
        produced = 0;
        streamError = null;
        stream = new Thread(() -> {
            try {
                for (int i = from; i < from + n; i += chunk) {
                    int size = Math.min(chunk, from + n - i);
                    produceRange(topic, i, size, partitions);
                    produced += size;
                    Thread.sleep(intervalMs);
                }
            } catch (Throwable t) {
                streamError = t;
            }
        }, "stream");
        stream.setDaemon(true);
        stream.start();
        return obj();
    }

    private void checkStream() {
        if (streamError != null) {
            throw new IllegalStateException("stream failed: " + describe(streamError));
        }
    }

    // -- admin ------------------------------------------------------------------------------

    private Admin admin() {
        if (admin == null) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
            p.put(AdminClientConfig.CLIENT_ID_CONFIG, "fakebroker-java-admin");
            admin = Admin.create(p);
        }
        return admin;
    }

    private Map<String, Object> waitCommitted(String group, String topic, int timeoutMs) throws Exception {
        Map<String, Object>[] last = new Map[1];
        try {
            waitFor("commits of " + group + " to reach the end of " + topic, timeoutMs, () -> {
                try {
                    Map<TopicPartition, OffsetAndMetadata> committed = admin().listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata().get(15, TimeUnit.SECONDS);
                    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
                    for (var d : admin().describeTopics(List.of(topic)).allTopicNames().get(15, TimeUnit.SECONDS).get(topic).partitions()) {
                        specs.put(new TopicPartition(topic, d.partition()), OffsetSpec.latest());
                    }
                    var ends = admin().listOffsets(specs).all().get(15, TimeUnit.SECONDS);
                    Map<String, Object> c = new TreeMap<>();
                    Map<String, Object> e = new TreeMap<>();
                    boolean done = true;
                    for (var entry : ends.entrySet()) {
                        OffsetAndMetadata om = committed.get(entry.getKey());
                        long at = om == null ? -1 : om.offset();
                        c.put(String.valueOf(entry.getKey().partition()), at);
                        e.put(String.valueOf(entry.getKey().partition()), entry.getValue().offset());
                        done &= at == entry.getValue().offset();
                    }
                    last[0] = obj("committed", c, "ends", e);
                    return done;
                } catch (Exception ex) {
                    last[0] = obj("exception", describe(ex));
                    return false;
                }
            }, 200);
        } catch (IllegalStateException e) {
            throw new IllegalStateException(e.getMessage() + ": " + toJson(last[0]));
        }
        return last[0];
    }

    @SuppressWarnings("deprecation")
    private Map<String, Object> listGroups() throws Exception {
        List<Object> groups = new ArrayList<>();
        for (ConsumerGroupListing g : admin().listConsumerGroups().all().get(15, TimeUnit.SECONDS)) {
            groups.add(obj("group", g.groupId(), "simple", g.isSimpleConsumerGroup(),
                    "state", g.groupState().map(Object::toString).orElse(null), "groupType", g.type().map(Object::toString).orElse(null)));
        }
        return obj("groups", groups);
    }

    private Map<String, Object> describeGroup(String group) throws Exception {
        ConsumerGroupDescription d = admin().describeConsumerGroups(List.of(group)).all().get(15, TimeUnit.SECONDS).get(group);
        List<Object> ms = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            ms.add(obj("memberId", m.consumerId(), "instance", m.groupInstanceId().orElse(null), "clientId", m.clientId(),
                    "host", m.host(), "partitions", partitions(m.assignment().topicPartitions())));
        }
        return obj("group", d.groupId(), "simple", d.isSimpleConsumerGroup(), "state", String.valueOf(d.groupState()),
                "groupType", String.valueOf(d.type()), "assignor", d.partitionAssignor(), "coordinator", d.coordinator().id(),
                "members", ms);
    }

    private Map<String, Object> deleteGroup(String group) throws Exception {
        try {
            admin().deleteConsumerGroups(List.of(group)).all().get(15, TimeUnit.SECONDS);
            return obj("deleted", true);
        } catch (ExecutionException e) {
            return obj("deleted", false, "exception", e.getCause().getClass().getSimpleName());
        }
    }

    private Map<String, Object> fetchOffsets(String group) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (var e : admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(15, TimeUnit.SECONDS).entrySet()) {
            out.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue() == null ? null : e.getValue().offset());
        }
        return obj("offsets", out);
    }

    // -- helpers ----------------------------------------------------------------------------

    private static void waitFor(String what, int timeoutMs, BooleanSupplier done) {
        waitFor(what, timeoutMs, done, 50);
    }

    private static void waitFor(String what, int timeoutMs, BooleanSupplier done, int stepMs) {
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
    private static String kafkaVersion() throws java.io.IOException {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            props.load(in);
        }
        return props.getProperty("version", "unknown");
    }

    private static int num(Map<String, String> a, String key, int dflt) {
        return a.containsKey(key) ? Integer.parseInt(a.get(key)) : dflt;
    }

    private static List<String> list(String csv) {
        return Arrays.asList(csv.split(","));
    }

    private static List<Integer> partitions(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        Collections.sort(out);
        return out;
    }

    private static String describe(Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        String trace = sw.toString();
        return trace.length() > 3000 ? trace.substring(0, 3000) : trace;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static synchronized void emit(Map<String, Object> m) {
        Map<String, Object> withTime = obj("t", (System.nanoTime() - T0) / 1_000_000);
        withTime.putAll(m);
        OUT.println(toJson(withTime));
        OUT.flush();
    }

    private static String toJson(Object v) {
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
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object o : (Collection<?>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
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
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                case '\n':
                    sb.append("\\n");
                    break;
                case '\r':
                    sb.append("\\r");
                    break;
                case '\t':
                    sb.append("\\t");
                    break;
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
}
