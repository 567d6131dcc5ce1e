package fakebroker;

import static fakebroker.Lines.errorOf;
import static fakebroker.Lines.kafkaVersion;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.text;
import static fakebroker.Lines.utf8;
import static fakebroker.Lines.write;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Drives the Java Kafka client against a fakebroker cluster for tests/clients/test_java_client.py.
 *
 * <pre>
 *   java -jar fakebroker-java-client.jar BOOTSTRAP SCENARIO ARGS...
 *
 *   produce-consume TOPIC N [COMPRESSION]   idempotent acks=all producer, then assign()+seekToBeginning
 *   compression PREFIX N CODEC...           produce-consume against topic PREFIX-CODEC per codec
 *   admin PREFIX                            the Admin API walk (see admin())
 * </pre>
 *
 * Every result is one JSON object per line on stdout, each with a "type"; logs go to stderr.
 * A failure prints {"type":"error",...} and exits 1. Every wait is bounded.
 */
public final class JavaClient {
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(30);

    private JavaClient() {
    }

    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: BOOTSTRAP SCENARIO ARGS...");
            System.exit(2);
        }
        String bootstrap = args[0];
        String scenario = args[1];
        List<String> rest = Arrays.asList(args).subList(2, args.length);
        int status = 0;
        try {
            write(obj("type", "version", "kafka_clients", kafkaVersion(), "java", System.getProperty("java.version")));
            switch (scenario) {
                case "produce-consume":
                    produceConsume(bootstrap, rest.get(0), Integer.parseInt(rest.get(1)), rest.size() > 2 ? rest.get(2) : "none");
                    break;
                case "compression":
                    // each codec on its own, so one failing codec does not hide the others' results
                    for (String codec : rest.subList(2, rest.size())) {
                        try {
                            produceConsume(bootstrap, rest.get(0) + "-" + codec, Integer.parseInt(rest.get(1)), codec);
                        } catch (Exception e) {
                            emitError(e, codec);
                            e.printStackTrace();
                            status = 1;
                        }
                    }
                    break;
                case "admin":
                    admin(bootstrap, rest.get(0));
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            write(obj("type", "end"));
        } catch (Throwable t) {
            emitError(t, null);
            t.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }

    // -- produce / consume ------------------------------------------------------------------

    private static void produceConsume(String bootstrap, String topic, int n, String compression) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        // a little longer for compressed runs, so codecs get multi-record batches
        p.put(ProducerConfig.LINGER_MS_CONFIG, "none".equals(compression) ? "5" : "20");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "fakebroker-java-producer");
        overrides(p, "fakebroker.producer.");
        int partitions;
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            partitions = producer.partitionsFor(topic).size();
            List<Future<RecordMetadata>> futures = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                futures.add(producer.send(new ProducerRecord<>(topic, i % partitions, utf8("key-" + i), utf8("value-" + i))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = futures.get(i).get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                write(obj("type", "sent", "topic", topic, "codec", compression, "i", i, "partition", md.partition(),
                        "offset", md.offset(), "timestamp", md.timestamp()));
            }
        }
        write(obj("type", "produced", "topic", topic, "codec", compression, "count", n, "partitions", partitions,
                "ms", (System.nanoTime() - started) / 1_000_000));
        consumeAll(bootstrap, topic, compression, n);
    }

    /** assign() every partition, seekToBeginning, read up to the end offsets taken first. */
    private static void consumeAll(String bootstrap, String topic, String codec, int expected) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "fakebroker-java-consumer");
        c.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
        overrides(c, "fakebroker.consumer.");
        long started = System.nanoTime();
        int consumed = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, STEP_TIMEOUT)) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, STEP_TIMEOUT);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, STEP_TIMEOUT);
            for (TopicPartition tp : tps) {
                write(obj("type", "offsets", "topic", topic, "partition", tp.partition(), "beginning", begin.get(tp), "end", end.get(tp)));
            }
            long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (System.nanoTime() < deadline && !reachedEnd(consumer, tps, end)) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    consumed++;
                    write(obj("type", "record", "topic", r.topic(), "codec", codec, "partition", r.partition(), "offset", r.offset(),
                            "key", text(r.key()), "value", text(r.value()), "timestamp", r.timestamp()));
                }
            }
            // One more short poll: anything past the end offsets would be a duplicate or a stray.
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                consumed++;
                write(obj("type", "record", "topic", r.topic(), "codec", codec, "partition", r.partition(), "offset", r.offset(),
                        "key", text(r.key()), "value", text(r.value()), "timestamp", r.timestamp()));
            }
        }
        write(obj("type", "consumed", "topic", topic, "codec", codec, "count", consumed, "expected", expected,
                "ms", (System.nanoTime() - started) / 1_000_000));
    }

    /** -Dfakebroker.producer.NAME=VALUE and -Dfakebroker.consumer.NAME=VALUE set client settings (e.g. small batches or fetch budgets). */
    private static void overrides(Properties props, String prefix) {
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith(prefix)) {
                props.put(name.substring(prefix.length()), System.getProperty(name));
            }
        }
    }

    private static boolean reachedEnd(KafkaConsumer<?, ?> consumer, List<TopicPartition> tps, Map<TopicPartition, Long> end) {
        for (TopicPartition tp : tps) {
            if (consumer.position(tp, STEP_TIMEOUT) < end.get(tp)) {
                return false;
            }
        }
        return true;
    }

    // -- admin ------------------------------------------------------------------------------

    /**
     * Topics PREFIX-main (3 partitions, two configs) and PREFIX-doomed (1 partition): create,
     * describe, grow, configs, records with chosen timestamps, list offsets, delete records,
     * delete the doomed topic, describe the cluster. PREFIX-main is left for Python to check.
     */
    private static void admin(String bootstrap, String prefix) throws Exception {
        String main = prefix + "-main";
        String doomed = prefix + "-doomed";
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        a.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        a.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        a.put(AdminClientConfig.CLIENT_ID_CONFIG, "fakebroker-java-admin");
        try (Admin admin = Admin.create(a)) {
            // createTopics, with configs; then the same name again must fail with TopicExistsException
            Map<String, String> configs = new TreeMap<>();
            configs.put("retention.ms", "86400000");
            configs.put("max.message.bytes", "2000000");
            CreateTopicsResult created = admin.createTopics(List.of(
                    new NewTopic(main, 3, (short) 1).configs(configs),
                    new NewTopic(doomed, 1, (short) 3)));
            created.all().get(30, TimeUnit.SECONDS);
            for (String name : List.of(main, doomed)) {
                Config cfg = created.config(name).get();
                write(obj("type", "created", "topic", name, "topic_id", created.topicId(name).get().toString(),
                        "partitions", created.numPartitions(name).get(), "replication_factor", created.replicationFactor(name).get(),
                        "configs", configMap(cfg.entries(), false)));
            }
            write(obj("type", "create_again", "error", errorOf(() -> admin.createTopics(List.of(new NewTopic(main, 1, (short) 1))).all().get(30, TimeUnit.SECONDS))));

            // describeTopics
            write(describeTopic(admin, main, "describe"));
            write(describeTopic(admin, doomed, "describe"));

            // createPartitions 3 -> 5; shrinking must fail
            admin.createPartitions(Map.of(main, NewPartitions.increaseTo(5))).all().get(30, TimeUnit.SECONDS);
            write(describeTopic(admin, main, "described_after_grow"));
            write(obj("type", "shrink", "error", errorOf(() -> admin.createPartitions(Map.of(main, NewPartitions.increaseTo(2))).all().get(30, TimeUnit.SECONDS))));

            // describeConfigs: topic and broker
            ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, main);
            ConfigResource brokerRes = new ConfigResource(ConfigResource.Type.BROKER, "0");
            ConfigResource clusterDefault = new ConfigResource(ConfigResource.Type.BROKER, "");
            emitConfigs(admin, "configs_before", topicRes, brokerRes);

            // incrementalAlterConfigs: topic SET / DELETE / APPEND, cluster-wide broker default SET
            Map<ConfigResource, Collection<AlterConfigOp>> ops = new LinkedHashMap<>();
            ops.put(topicRes, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND)));
            ops.put(clusterDefault, List.of(new AlterConfigOp(new ConfigEntry("log.retention.bytes", "2000000"), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(ops).all().get(30, TimeUnit.SECONDS);
            write(obj("type", "altered"));
            write(obj("type", "alter_unknown", "error", errorOf(() -> admin.incrementalAlterConfigs(Map.of(topicRes, List.of(
                    new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS))));
            emitConfigs(admin, "configs_after", topicRes, brokerRes);

            // records with chosen timestamps on partition 0: base + 1000*i, except record 6 is the newest
            long base = System.currentTimeMillis() - 600_000L;
            List<Long> timestamps = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                timestamps.add(i == 6 ? base + 50_000L : base + 1_000L * i);
            }
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < timestamps.size(); i++) {
                    // one send at a time: one batch per record, so every record has its own offset/timestamp index entry
                    RecordMetadata md = producer.send(new ProducerRecord<>(main, 0, timestamps.get(i), utf8("k" + i), utf8("v" + i)))
                            .get(30, TimeUnit.SECONDS);
                    write(obj("type", "ts_record", "i", i, "partition", md.partition(), "offset", md.offset(), "timestamp", timestamps.get(i)));
                }
            }

            // listOffsets: earliest, latest, forTimestamp, maxTimestamp
            TopicPartition tp0 = new TopicPartition(main, 0);
            TopicPartition tp4 = new TopicPartition(main, 4);
            Map<String, OffsetSpec> specs = new LinkedHashMap<>();
            specs.put("earliest", OffsetSpec.earliest());
            specs.put("latest", OffsetSpec.latest());
            specs.put("for_timestamp", OffsetSpec.forTimestamp(base + 2_500L));
            specs.put("for_timestamp_exact", OffsetSpec.forTimestamp(base + 3_000L));
            specs.put("for_timestamp_future", OffsetSpec.forTimestamp(base + 3_600_000L));
            specs.put("max_timestamp", OffsetSpec.maxTimestamp());
            emitOffsets(admin, "list_offsets", tp0, specs);
            emitOffsets(admin, "list_offsets_empty", tp4, specs);

            // deleteRecords before offset 3, then earliest again
            long lowWatermark = admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(tp0)
                    .get(30, TimeUnit.SECONDS).lowWatermark();
            write(obj("type", "deleted_records", "partition", 0, "low_watermark", lowWatermark));
            write(obj("type", "delete_beyond", "error", errorOf(() -> admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(99))).all().get(30, TimeUnit.SECONDS))));
            Map<String, OffsetSpec> after = new LinkedHashMap<>();
            after.put("earliest", OffsetSpec.earliest());
            after.put("latest", OffsetSpec.latest());
            after.put("for_timestamp_deleted", OffsetSpec.forTimestamp(base));
            emitOffsets(admin, "list_offsets_after_delete", tp0, after);

            // deleteTopics, then the topic list
            admin.deleteTopics(List.of(doomed)).all().get(30, TimeUnit.SECONDS);
            write(obj("type", "deleted_topic", "topic", doomed));
            write(obj("type", "describe_deleted", "error", errorOf(() -> admin.describeTopics(List.of(doomed)).allTopicNames().get(30, TimeUnit.SECONDS))));
            write(obj("type", "topics", "names", new ArrayList<>(new java.util.TreeSet<>(admin.listTopics().names().get(30, TimeUnit.SECONDS)))));

            // describeCluster
            DescribeClusterResult cluster = admin.describeCluster();
            List<Object> nodes = new ArrayList<>();
            for (Node node : cluster.nodes().get(30, TimeUnit.SECONDS)) {
                nodes.add(obj("id", node.id(), "host", node.host(), "port", node.port(), "rack", node.rack()));
            }
            nodes.sort((x, y) -> Integer.compare((Integer) ((Map<?, ?>) x).get("id"), (Integer) ((Map<?, ?>) y).get("id")));
            Node controller = cluster.controller().get(30, TimeUnit.SECONDS);
            write(obj("type", "cluster", "cluster_id", cluster.clusterId().get(30, TimeUnit.SECONDS),
                    "controller", controller == null ? null : controller.id(), "nodes", nodes));
        }
    }

    private static Map<String, Object> describeTopic(Admin admin, String name, String type) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS).get(name);
        List<Object> parts = new ArrayList<>();
        for (TopicPartitionInfo info : d.partitions()) {
            List<Integer> replicas = new ArrayList<>();
            info.replicas().forEach(n -> replicas.add(n.id()));
            List<Integer> isr = new ArrayList<>();
            info.isr().forEach(n -> isr.add(n.id()));
            parts.add(obj("partition", info.partition(), "leader", info.leader() == null ? null : info.leader().id(),
                    "replicas", replicas, "isr", isr));
        }
        return obj("type", type, "topic", d.name(), "topic_id", d.topicId().toString(), "internal", d.isInternal(), "partitions", parts);
    }

    private static void emitConfigs(Admin admin, String type, ConfigResource... resources) throws Exception {
        Map<ConfigResource, Config> all = admin.describeConfigs(List.of(resources)).all().get(30, TimeUnit.SECONDS);
        for (ConfigResource r : resources) {
            write(obj("type", type, "resource_type", r.type().name(), "name", r.name(), "configs", configMap(all.get(r).entries(), true)));
        }
    }

    private static Map<String, Object> configMap(Collection<ConfigEntry> entries, boolean withSource) {
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry e : entries) {
            out.put(e.name(), withSource ? obj("value", e.value(), "source", e.source() == null ? null : e.source().name(),
                    "read_only", e.isReadOnly(), "sensitive", e.isSensitive(), "type", e.type() == null ? null : e.type().name()) : e.value());
        }
        return out;
    }

    private static void emitOffsets(Admin admin, String type, TopicPartition tp, Map<String, OffsetSpec> specs) throws Exception {
        for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
            ListOffsetsResult.ListOffsetsResultInfo info =
                    admin.listOffsets(Map.of(tp, spec.getValue())).partitionResult(tp).get(30, TimeUnit.SECONDS);
            write(obj("type", type, "spec", spec.getKey(), "partition", tp.partition(), "offset", info.offset(),
                    "timestamp", info.timestamp(), "leader_epoch", info.leaderEpoch().orElse(null)));
        }
    }

    private static void emitError(Throwable t, String codec) {
        Throwable cause = t.getCause();
        write(obj("type", "error", "codec", codec, "error", t.getClass().getName(), "message", String.valueOf(t.getMessage()),
                "cause", cause == null ? null : cause.getClass().getName() + ": " + cause.getMessage()));
    }
}
