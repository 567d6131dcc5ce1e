package fakebroker;

import static fakebroker.Lines.describe;
import static fakebroker.Lines.emit;
import static fakebroker.Lines.list;
import static fakebroker.Lines.num;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.partitions;
import static fakebroker.Lines.toJson;
import static fakebroker.Lines.waitFor;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.admin.Admin;
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
 * (enable.auto.commit=false), so "take over from commits" is exact; with {@code commit=record}
 * they commit each record instead. With {@code report=true} (implied by commit=record) each record
 * processed and each offset committed is a "processed"/"committed" line, for a delivery ledger.
 * {@code processMs} makes each non-empty poll that slow before its commit; {@code settleMs} waits that
 * long between a poll's "processed" lines and its commit, so a ledger reading them from the pipe
 * stamps them before the commit (or a rejoin after it) changes the group.
 * {@code regex} subscribes with a java.util.regex.Pattern. Every wait is bounded.
 */
public final class GroupScenarios {
    private static final Duration API_TIMEOUT = Duration.ofSeconds(15);

    private final String bootstrap;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    private final List<Object[]> consumed = Collections.synchronizedList(new ArrayList<>());
    private KafkaProducer<byte[], byte[]> producer;
    private Admin admin;
    private final Feed feed = new Feed(this::producer);

    private GroupScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        GroupScenarios driver = new GroupScenarios(args[0]);
        Lines.serve(driver::run, driver.feed::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "start":
                return start(a);
            case "waitAssigned":
                return waitAssigned(list(a.get("names")), a.get("topic"), num(a, "partitions", 6), num(a, "timeoutMs", 20000),
                        !"false".equals(a.get("sameGeneration")));
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
                return null; // the feed's, or unknown
        }
    }

    // -- consumers --------------------------------------------------------------------------

    /** One KafkaConsumer on its own thread: poll, record, commitSync, repeat. */
    private final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        String pattern; // a server-side (RE2/J) regex subscription instead of the topic, with group.protocol=consumer
        String regex; // a client-side java.util.regex subscription (classic protocol): matched against metadata
        boolean perRecord; // commitSync after each record instead of after each poll
        boolean report; // each record processed and each offset committed as a line (for a delivery ledger)
        int processMs; // processing time per non-empty poll, before its commit (slow processing)
        int settleMs; // after a poll's processed lines, before its commit
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
                if (regex != null) {
                    consumer.subscribe(java.util.regex.Pattern.compile(regex), this);
                } else if (pattern != null) {
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
                    if (perRecord) {
                        processEach(records);
                        continue;
                    }
                    if (processMs > 0) {
                        emit(obj("type", "processing", "name", name, "records", records.count()));
                        Thread.sleep(processMs);
                    }
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        process(r);
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (settleMs > 0) {
                        Thread.sleep(settleMs);
                    }
                    try {
                        consumer.commitSync(next, API_TIMEOUT);
                    } catch (CommitFailedException | RebalanceInProgressException | WakeupException e) { // wakeup: closing
                        emit(obj("type", "commit_failed", "name", name, "error", e.getClass().getSimpleName(),
                                "partitions", partitions(next.keySet())));
                        continue;
                    }
                    if (report) {
                        for (var c : next.entrySet()) {
                            committed(c.getKey(), c.getValue().offset());
                        }
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

        /** Each record processed then committed on its own; a failed commit abandons the rest of the
         *  batch and rewinds the partitions still owned to their first record not committed, so a
         *  failure costs at most one repeat (the record whose commit failed). */
        private void processEach(ConsumerRecords<byte[], byte[]> records) {
            Map<TopicPartition, Long> uncommitted = new HashMap<>();
            for (TopicPartition tp : records.partitions()) {
                uncommitted.put(tp, records.records(tp).get(0).offset());
            }
            for (ConsumerRecord<byte[], byte[]> r : records) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                process(r);
                try {
                    consumer.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)), API_TIMEOUT);
                } catch (org.apache.kafka.common.KafkaException e) { // rebalance, removal, timeout, wakeup on close
                    emit(obj("type", "commit_failed", "name", name, "error", e.getClass().getSimpleName(),
                            "partitions", partitions(List.of(tp)), "offset", r.offset()));
                    Set<TopicPartition> owned = consumer.assignment();
                    for (var u : uncommitted.entrySet()) {
                        if (owned.contains(u.getKey())) {
                            consumer.seek(u.getKey(), u.getValue());
                        }
                    }
                    return;
                }
                uncommitted.put(tp, r.offset() + 1);
                committed(tp, r.offset() + 1);
            }
        }

        private void process(ConsumerRecord<byte[], byte[]> r) {
            String key = new String(r.key(), StandardCharsets.UTF_8);
            consumed.add(new Object[] {name, r.partition(), r.offset(), key});
            if (report) {
                emit(obj("type", "processed", "name", name, "topic", r.topic(), "partition", r.partition(),
                        "offset", r.offset(), "key", key));
            }
        }

        private void committed(TopicPartition tp, long next) {
            emit(obj("type", "committed", "name", name, "topic", tp.topic(), "partition", tp.partition(), "offset", next));
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
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, a.getOrDefault("maxPollRecords", "50"));
        if (a.containsKey("metadataMaxAge")) { // how soon a regex subscription sees a new topic
            p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, a.get("metadataMaxAge"));
        }
        if (a.containsKey("instance")) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, a.get("instance"));
        }
        if (a.containsKey("rack")) { // KIP-881: rack-aware assignment when the brokers have racks too
            p.put(ConsumerConfig.CLIENT_RACK_CONFIG, a.get("rack"));
        }
        if (a.containsKey("assignors")) { // e.g. "range" or "cooperative-sticky,range" (Kafka's short names)
            List<String> classes = new ArrayList<>();
            for (String short_ : list(a.get("assignors"))) {
                classes.add(short_.equals("range") ? "org.apache.kafka.clients.consumer.RangeAssignor"
                        : short_.equals("roundrobin") ? "org.apache.kafka.clients.consumer.RoundRobinAssignor"
                        : short_.equals("sticky") ? "org.apache.kafka.clients.consumer.StickyAssignor"
                        : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            }
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, String.join(",", classes));
        }
        Member m = new Member(name, p, a.get("topic"));
        m.pattern = a.get("pattern");
        m.regex = a.get("regex");
        m.perRecord = "record".equals(a.get("commit"));
        m.report = m.perRecord || "true".equals(a.get("report"));
        m.processMs = num(a, "processMs", 0);
        m.settleMs = num(a, "settleMs", 0);
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

    private synchronized KafkaProducer<byte[], byte[]> producer() {
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

    // -- admin ------------------------------------------------------------------------------

    private Admin admin() {
        if (admin == null) {
            admin = Lines.admin(bootstrap, "fakebroker-java-admin");
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
}
