package fakebroker;

import static fakebroker.Lines.describe;
import static fakebroker.Lines.emit;
import static fakebroker.Lines.list;
import static fakebroker.Lines.num;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.text;
import static fakebroker.Lines.waitFor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.DeleteShareGroupsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * KafkaShareConsumers (KIP-932 share groups) and the Admin client's share-group APIs, driven by
 * commands on stdin, for tests/clients/test_java_share.py.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.ShareScenarios BOOTSTRAP
 * </pre>
 *
 * Each stdin line is {@code ID COMMAND key=value...}; each gets exactly one JSON reply line
 * {@code {"type":"reply","id":ID,...}} ("error" when the command itself failed; a failed Admin call
 * answers {@code {"exception": SimpleClassName, "message": ...}} instead). Records are produced
 * with the Feed's commands ({@code produce topic= n= partitions= [first=]}: key "key-I", value
 * "value-I" on partition I % partitions).
 *
 * <p>Consumers ({@code start name= group= topics=a,b [ack=implicit|explicit] ...}) each poll on a
 * thread of their own and print, as notes:
 * <ul>
 *   <li>{@code record}: one per record received: name, topic, partition, offset, key, value,
 *       deliveryCount (null if the broker sent none) and ack, what this consumer did with it:
 *       "implicit" (implicit mode: accepted by the next poll), ACCEPT, RELEASE, REJECT, or "hold"
 *       (kept acquired, never acknowledged);</li>
 *   <li>{@code acked}: the acknowledgement commit callback: topic, partition, offsets and error
 *       (simple class name, or null);</li>
 *   <li>{@code commit}: after each commitSync in explicit mode, its per-partition result;</li>
 *   <li>{@code holding} when a consumer starts holding, {@code closed} (with closeMs, the time its
 *       close took), {@code consumer_failed}.</li>
 * </ul>
 * In explicit mode each record is acknowledged by the first rule that matches it: {@code
 * releaseAlways} (RELEASE every time), {@code release} (RELEASE the first time this driver sees it,
 * ACCEPT afterwards), {@code reject} (REJECT), else ACCEPT; then commitSync. A rule is a comma
 * list of record specs, each a key ("key-3"), "PARTITION:OFFSET" or "TOPIC:PARTITION:OFFSET".
 * With {@code holdAfter=N} a consumer stops polling once it has received N records (the whole
 * last poll is held: not acknowledged, not accepted implicitly) and keeps them acquired until
 * {@code stop}, which closes it.
 */
public final class ShareScenarios {
    private static final Duration API_TIMEOUT = Duration.ofSeconds(15);
    private static final int ADMIN_SECONDS = 20;

    private final String bootstrap;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    /** Every record any consumer received, in order: the note lines printed for them. */
    private final List<Map<String, Object>> received = Collections.synchronizedList(new ArrayList<>());
    /** Record specs the release rule has already released once. */
    private final Set<String> releasedOnce = ConcurrentHashMap.newKeySet();
    private KafkaProducer<byte[], byte[]> producer;
    private Admin admin;
    private final Feed feed = new Feed(this::producer);

    private ShareScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        ShareScenarios driver = new ShareScenarios(args[0]);
        Lines.serve(driver::run, driver.feed::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "start":
                return start(a);
            case "stop":
                return stop(a.get("name"));
            case "waitRecords":
                return waitRecords(a.get("name"), num(a, "count", 1), "true".equals(a.get("distinct")),
                        num(a, "timeoutMs", 30000));
            case "waitHolding":
                waitFor(a.get("name") + " holding records", num(a, "timeoutMs", 30000), () -> member(a.get("name")).holding);
                return obj("held", member(a.get("name")).count);
            case "records":
                return obj("records", records(a.get("name")));
            default:
                break;
        }
        try {
            switch (cmd) {
                case "createTopic":
                    admin().createTopics(List.of(new NewTopic(a.get("topic"), num(a, "partitions", 1), (short) 1)))
                            .all().get(ADMIN_SECONDS, TimeUnit.SECONDS);
                    waitFor("metadata of " + a.get("topic"), 15000, () -> topicKnown(a.get("topic")), 100);
                    return obj("created", a.get("topic"));
                case "setGroupConfig":
                    return setGroupConfig(a.get("group"), a.getOrDefault("configs", ""), a.getOrDefault("delete", ""));
                case "describeShare":
                    return describeShare(a.get("group"));
                case "waitShareAssigned":
                    return waitShareAssigned(a.get("group"), num(a, "members", 1), num(a, "partitions", 1),
                            num(a, "timeoutMs", 30000));
                case "listGroups":
                    return listGroups("true".equals(a.get("all")));
                case "listShareOffsets":
                    return listShareOffsets(a.get("group"), a.get("topic"), a.get("partitions"));
                case "alterShareOffsets":
                    return alterShareOffsets(a.get("group"), a.get("topic"), a.get("offsets"));
                case "deleteShareOffsets":
                    return deleteShareOffsets(a.get("group"), list(a.get("topics")));
                case "deleteShareGroups":
                    return deleteShareGroups(list(a.get("groups")));
                case "exit":
                    for (String name : new ArrayList<>(members.keySet())) {
                        if (members.get(name).thread.isAlive()) {
                            stop(name);
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
        } catch (ExecutionException e) {
            return failure(e.getCause());
        }
    }

    private static Map<String, Object> failure(Throwable t) {
        return obj("exception", t.getClass().getSimpleName(), "message", t.getMessage());
    }

    private static String errorName(Throwable t) {
        return t == null ? null : t.getClass().getSimpleName();
    }

    // -- consumers --------------------------------------------------------------------------

    private Member member(String name) {
        Member m = members.get(name);
        if (m == null) {
            throw new IllegalArgumentException("no consumer " + name);
        }
        return m;
    }

    /** One KafkaShareConsumer on its own thread: poll, acknowledge by the rules, commit, repeat. */
    private final class Member implements Runnable {
        final String name;
        final KafkaShareConsumer<byte[], byte[]> consumer;
        final List<String> topics;
        final boolean explicit;
        final Set<String> release;
        final Set<String> releaseAlways;
        final Set<String> reject;
        final int holdAfter;
        final int pollMs;
        final Thread thread;
        volatile boolean running = true;
        volatile boolean holding;
        volatile int count;

        Member(String name, Properties props, Map<String, String> a) {
            this.name = name;
            this.topics = list(a.get("topics"));
            this.explicit = "explicit".equals(a.getOrDefault("ack", "implicit"));
            this.release = specs(a.get("release"));
            this.releaseAlways = specs(a.get("releaseAlways"));
            this.reject = specs(a.get("reject"));
            this.holdAfter = num(a, "holdAfter", 0);
            this.pollMs = num(a, "pollMs", 200);
            this.consumer = new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.thread = new Thread(this, "share-consumer-" + name);
            this.thread.setDaemon(true);
        }

        @Override
        public void run() {
            try {
                consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
                    for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
                        emit(obj("type", "acked", "name", name, "topic", e.getKey().topic(),
                                "partition", e.getKey().partition(), "offsets", new TreeSet<>(e.getValue()),
                                "error", errorName(exception),
                                "message", exception == null ? null : exception.getMessage()));
                    }
                });
                consumer.subscribe(topics);
                while (running) {
                    ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(pollMs));
                    } catch (WakeupException e) {
                        continue;
                    }
                    if (records.isEmpty()) {
                        continue;
                    }
                    boolean hold = holdAfter > 0 && count + records.count() >= holdAfter;
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        AcknowledgeType type = hold || !explicit ? null : decide(r);
                        note(r, hold ? "hold" : type == null ? "implicit" : type.name());
                        if (type != null) {
                            consumer.acknowledge(r, type);
                        }
                    }
                    if (hold) {
                        holding = true;
                        emit(obj("type", "holding", "name", name, "records", records.count()));
                        while (running) {
                            try {
                                Thread.sleep(50);
                            } catch (InterruptedException e) {
                                break;
                            }
                        }
                        break;
                    }
                    if (explicit) {
                        Map<TopicIdPartition, Optional<org.apache.kafka.common.KafkaException>> result;
                        try {
                            result = consumer.commitSync(API_TIMEOUT);
                        } catch (WakeupException e) { // stopping: the acknowledgements go with close
                            continue;
                        }
                        Map<String, Object> results = new TreeMap<>();
                        for (var e : result.entrySet()) {
                            results.put(e.getKey().topic() + ":" + e.getKey().partition(),
                                    e.getValue().map(ShareScenarios::errorName).orElse(null));
                        }
                        emit(obj("type", "commit", "name", name, "results", results));
                    }
                }
            } catch (Throwable t) {
                emit(obj("type", "consumer_failed", "name", name, "error", describe(t)));
                t.printStackTrace();
            } finally {
                long started = System.nanoTime();
                String error = null;
                try {
                    consumer.close(Duration.ofSeconds(15));
                } catch (Throwable t) {
                    error = describe(t);
                }
                emit(obj("type", "closed", "name", name, "closeMs", (System.nanoTime() - started) / 1_000_000,
                        "error", error));
            }
        }

        private AcknowledgeType decide(ConsumerRecord<byte[], byte[]> r) {
            List<String> ids = ids(r);
            if (matches(releaseAlways, ids)) {
                return AcknowledgeType.RELEASE;
            }
            if (matches(release, ids) && releasedOnce.add(ids.get(2))) {
                return AcknowledgeType.RELEASE;
            }
            if (matches(reject, ids)) {
                return AcknowledgeType.REJECT;
            }
            return AcknowledgeType.ACCEPT;
        }

        private void note(ConsumerRecord<byte[], byte[]> r, String ack) {
            count++;
            Map<String, Object> line = obj("type", "record", "name", name, "topic", r.topic(),
                    "partition", r.partition(), "offset", r.offset(), "key", text(r.key()), "value", text(r.value()),
                    "deliveryCount", r.deliveryCount().map(Short::intValue).orElse(null), "ack", ack);
            emit(line);
            received.add(line);
        }
    }

    /** A record's names for the rules: its key, PARTITION:OFFSET and TOPIC:PARTITION:OFFSET. */
    private static List<String> ids(ConsumerRecord<byte[], byte[]> r) {
        String key = r.key() == null ? "" : text(r.key());
        return List.of(key, r.partition() + ":" + r.offset(), r.topic() + ":" + r.partition() + ":" + r.offset());
    }

    private static boolean matches(Set<String> rule, List<String> ids) {
        for (String id : ids) {
            if (rule.contains(id)) {
                return true;
            }
        }
        return false;
    }

    private static Set<String> specs(String csv) {
        return csv == null || csv.isEmpty() ? Set.of() : new HashSet<>(list(csv));
    }

    private Map<String, Object> start(Map<String, String> a) {
        String name = a.get("name");
        if (members.containsKey(name) && members.get(name).thread.isAlive()) {
            throw new IllegalStateException("consumer " + name + " is running");
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "fakebroker-share-" + name);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, a.getOrDefault("ack", "implicit"));
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        if (a.containsKey("maxPollRecords")) {
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, a.get("maxPollRecords"));
        }
        if (a.containsKey("acquireMode")) { // batch_optimized (the default) or record_limit
            p.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, a.get("acquireMode"));
        }
        if (a.containsKey("fetchMaxWait")) {
            p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, a.get("fetchMaxWait"));
        }
        Member m = new Member(name, p, a);
        members.put(name, m);
        m.thread.start();
        return obj("name", name);
    }

    /** Stops polling and closes the consumer (releasing what it holds); its time to close in "closeMs". */
    private Map<String, Object> stop(String name) throws InterruptedException {
        Member m = member(name);
        long started = System.nanoTime();
        m.running = false;
        m.consumer.wakeup();
        m.thread.join(30000);
        if (m.thread.isAlive()) {
            throw new IllegalStateException("consumer " + name + " did not close");
        }
        return obj("name", name, "received", m.count, "stopMs", (System.nanoTime() - started) / 1_000_000);
    }

    private Map<String, Object> waitRecords(String name, int count, boolean distinct, int timeoutMs) {
        waitFor(count + (distinct ? " distinct" : "") + " records" + (name == null ? "" : " by " + name), timeoutMs,
                () -> {
                    List<Map<String, Object>> rs = records(name);
                    if (!distinct) {
                        return rs.size() >= count;
                    }
                    Set<String> seen = new HashSet<>();
                    for (Map<String, Object> r : rs) {
                        seen.add(r.get("topic") + ":" + r.get("partition") + ":" + r.get("offset"));
                    }
                    return seen.size() >= count;
                });
        return obj("received", records(name).size());
    }

    private List<Map<String, Object>> records(String name) {
        List<Map<String, Object>> out = new ArrayList<>();
        synchronized (received) {
            for (Map<String, Object> r : received) {
                if (name == null || name.equals(r.get("name"))) {
                    out.add(r);
                }
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
            p.put(ProducerConfig.CLIENT_ID_CONFIG, "fakebroker-share-producer");
            producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        }
        return producer;
    }

    // -- admin ------------------------------------------------------------------------------

    private Admin admin() {
        if (admin == null) {
            admin = Lines.admin(bootstrap, "fakebroker-share-admin");
        }
        return admin;
    }

    private boolean topicKnown(String topic) {
        try {
            admin().describeTopics(List.of(topic)).allTopicNames().get(ADMIN_SECONDS, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** incrementalAlterConfigs on the GROUP resource: SET each "key:value" of {@code configs}
     *  (';'-separated; the value is everything after the first ':'), DELETE each key of {@code delete}. */
    private Map<String, Object> setGroupConfig(String group, String configs, String delete) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : configs.isEmpty() ? new String[0] : configs.split(";")) {
            int colon = kv.indexOf(':');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, colon), kv.substring(colon + 1)),
                    AlterConfigOp.OpType.SET));
        }
        for (String key : delete.isEmpty() ? new String[0] : delete.split(",")) {
            ops.add(new AlterConfigOp(new ConfigEntry(key, ""), AlterConfigOp.OpType.DELETE));
        }
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin().incrementalAlterConfigs(Map.of(resource, ops)).all().get(ADMIN_SECONDS, TimeUnit.SECONDS);
        return obj("ok", true);
    }

    private static List<String> topicPartitions(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.topic() + ":" + tp.partition());
        }
        Collections.sort(out);
        return out;
    }

    private Map<String, Object> describeShare(String group) throws Exception {
        ShareGroupDescription d = admin().describeShareGroups(List.of(group)).all()
                .get(ADMIN_SECONDS, TimeUnit.SECONDS).get(group);
        List<Object> ms = new ArrayList<>();
        for (ShareMemberDescription m : d.members()) {
            ms.add(obj("memberId", m.consumerId(), "clientId", m.clientId(), "host", m.host(),
                    "rack", m.rackId().orElse(null), "memberEpoch", m.memberEpoch(),
                    "partitions", topicPartitions(m.assignment().topicPartitions())));
        }
        ms.sort((x, y) -> String.valueOf(((Map<?, ?>) x).get("clientId")).compareTo(
                String.valueOf(((Map<?, ?>) y).get("clientId"))));
        return obj("group", d.groupId(), "state", String.valueOf(d.groupState()), "groupEpoch", d.groupEpoch(),
                "targetAssignmentEpoch", d.targetAssignmentEpoch(),
                "coordinator", d.coordinator() == null ? null : d.coordinator().id(), "members", ms);
    }

    /** Until the group has {@code members} members, all at the group epoch (the target assignment's),
     *  each with at least one partition, whose assignments together cover partitions
     *  0..partitions-1 of their topic (each partition once when members <= partitions); the last
     *  description. */
    private Map<String, Object> waitShareAssigned(String group, int members, int partitions, int timeoutMs) {
        Map<String, Object>[] last = new Map[1];
        try {
            waitFor(members + " members of " + group + " covering " + partitions + " partitions", timeoutMs, () -> {
                try {
                    last[0] = describeShare(group);
                } catch (Exception e) {
                    last[0] = obj("exception", describe(e));
                    return false;
                }
                List<?> ms = (List<?>) last[0].get("members");
                Object epoch = last[0].get("groupEpoch");
                if (ms.size() != members || !epoch.equals(last[0].get("targetAssignmentEpoch"))) {
                    return false;
                }
                Set<String> covered = new HashSet<>();
                int held = 0;
                for (Object m : ms) {
                    List<?> ps = (List<?>) ((Map<?, ?>) m).get("partitions");
                    if (ps.isEmpty() || !epoch.equals(((Map<?, ?>) m).get("memberEpoch"))) {
                        return false;
                    }
                    for (Object p : ps) {
                        covered.add(((String) p).substring(((String) p).lastIndexOf(':') + 1));
                    }
                    held += ps.size();
                }
                // with no more members than partitions, Kafka's simple assignor gives each partition once
                return covered.size() == partitions && (members > partitions || held == partitions);
            }, 100);
        } catch (IllegalStateException e) {
            throw new IllegalStateException(e.getMessage() + ": " + Lines.toJson(last[0]));
        }
        return last[0];
    }

    /** listGroups(ListGroupsOptions.forShareGroups()), or every group with {@code all}. */
    private Map<String, Object> listGroups(boolean all) throws Exception {
        ListGroupsOptions options = all ? new ListGroupsOptions() : ListGroupsOptions.forShareGroups();
        List<Object> groups = new ArrayList<>();
        for (GroupListing g : admin().listGroups(options).all().get(ADMIN_SECONDS, TimeUnit.SECONDS)) {
            groups.add(obj("group", g.groupId(), "type", g.type().map(Object::toString).orElse(null),
                    "state", g.groupState().map(Object::toString).orElse(null), "protocol", g.protocol()));
        }
        return obj("groups", groups);
    }

    /** listShareGroupOffsets of the whole group, or of {@code topic}'s partitions ("0,1,..."). */
    private Map<String, Object> listShareOffsets(String group, String topic, String partitions) throws Exception {
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (topic != null) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String p : list(partitions)) {
                tps.add(new TopicPartition(topic, Integer.parseInt(p)));
            }
            spec.topicPartitions(tps);
        }
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin().listShareGroupOffsets(Map.of(group, spec))
                .partitionsToOffsetInfo(group).get(ADMIN_SECONDS, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (var e : got.entrySet()) {
            SharePartitionOffsetInfo i = e.getValue();
            out.put(e.getKey().topic() + ":" + e.getKey().partition(), i == null ? null
                    : obj("startOffset", i.startOffset(), "leaderEpoch", i.leaderEpoch().orElse(null),
                            "lag", i.lag().orElse(null)));
        }
        return obj("offsets", out);
    }

    /** alterShareGroupOffsets for {@code topic}: "P:O,..." or "earliest"/"latest" (every partition,
     *  from ListOffsets). Per-partition results (error class or null) and the overall one. */
    private Map<String, Object> alterShareOffsets(String group, String topic, String offsets) throws Exception {
        Map<TopicPartition, Long> target = new LinkedHashMap<>();
        if (offsets.equals("earliest") || offsets.equals("latest")) {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (var d : admin().describeTopics(List.of(topic)).allTopicNames().get(ADMIN_SECONDS, TimeUnit.SECONDS)
                    .get(topic).partitions()) {
                specs.put(new TopicPartition(topic, d.partition()),
                        offsets.equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest());
            }
            for (var e : admin().listOffsets(specs).all().get(ADMIN_SECONDS, TimeUnit.SECONDS).entrySet()) {
                target.put(e.getKey(), e.getValue().offset());
            }
        } else {
            for (String po : list(offsets)) {
                int colon = po.indexOf(':');
                target.put(new TopicPartition(topic, Integer.parseInt(po.substring(0, colon))),
                        Long.parseLong(po.substring(colon + 1)));
            }
        }
        AlterShareGroupOffsetsResult result = admin().alterShareGroupOffsets(group, target);
        Map<String, Object> partitions = new TreeMap<>();
        for (TopicPartition tp : target.keySet()) {
            partitions.put(tp.topic() + ":" + tp.partition(), outcome(result.partitionResult(tp)));
        }
        Map<String, Object> requested = new TreeMap<>();
        target.forEach((tp, o) -> requested.put(tp.topic() + ":" + tp.partition(), o));
        Map<String, Object> out = obj("requested", requested, "results", partitions);
        out.putAll(outcomeOf(result.all()));
        return out;
    }

    private Map<String, Object> deleteShareOffsets(String group, List<String> topics) {
        DeleteShareGroupOffsetsResult result = admin().deleteShareGroupOffsets(group, new HashSet<>(topics));
        Map<String, Object> perTopic = new TreeMap<>();
        for (String t : topics) {
            perTopic.put(t, outcome(result.topicResult(t)));
        }
        Map<String, Object> out = obj("results", perTopic);
        out.putAll(outcomeOf(result.all()));
        return out;
    }

    private Map<String, Object> deleteShareGroups(List<String> groups) {
        DeleteShareGroupsResult result = admin().deleteShareGroups(groups);
        Map<String, Object> perGroup = new TreeMap<>();
        for (String g : groups) {
            perGroup.put(g, outcome(result.deletedGroups().get(g)));
        }
        return obj("results", perGroup);
    }

    /** null when the future succeeded, else {"exception": SimpleClassName, "message": ...}. */
    private static Object outcome(KafkaFuture<Void> f) {
        Map<String, Object> o = outcomeOf(f);
        return o.isEmpty() ? null : o;
    }

    private static Map<String, Object> outcomeOf(KafkaFuture<Void> f) {
        try {
            f.get(ADMIN_SECONDS, TimeUnit.SECONDS);
            return obj();
        } catch (ExecutionException e) {
            return failure(e.getCause());
        } catch (Exception e) {
            return failure(e);
        }
    }
}
