package fakebroker;

import static fakebroker.Lines.list;
import static fakebroker.Lines.num;
import static fakebroker.Lines.obj;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java Admin client's partition admin calls for tests/clients/test_java_partition_admin.py:
 * describeTopics (DescribeTopicPartitions in 4.x, paged by partitionSizeLimitPerResponse),
 * electLeaders, describeLogDirs, alterPartitionReassignments and listPartitionReassignments,
 * plus a plain producer for input records (Feed's "produce").
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.AdminScenarios BOOTSTRAP
 * </pre>
 *
 * Each stdin line is {@code ID COMMAND key=value...}; each gets one JSON reply line. A call that
 * fails per partition or per topic answers the exception's simple name in that place.
 */
public final class AdminScenarios {
    private static final long TIMEOUT_S = 20;

    private final String bootstrap;
    private Admin admin;
    private KafkaProducer<byte[], byte[]> producer;
    private final Feed feed = new Feed(this::producer);

    private AdminScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        AdminScenarios driver = new AdminScenarios(args[0]);
        Lines.serve(driver::run, driver.feed::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "describeTopics":
                return describeTopics(list(a.get("topics")), num(a, "limit", 0));
            case "electLeaders":
                return electLeaders(a.getOrDefault("type", "PREFERRED"), a.get("topic"), list(a.get("partitions")));
            case "describeLogDirs":
                return describeLogDirs(list(a.get("brokers")));
            case "reassign":
                return reassign(a.get("topic"), num(a, "partition", 0), a.get("replicas"));
            case "listReassignments":
                return listReassignments();
            case "exit":
                if (producer != null) {
                    producer.close(Duration.ofSeconds(5));
                }
                if (admin != null) {
                    admin.close(Duration.ofSeconds(5));
                }
                return obj();
            default:
                return null;
        }
    }

    private synchronized Admin admin() {
        if (admin == null) {
            admin = Lines.admin(bootstrap, "java-partition-admin");
        }
        return admin;
    }

    private synchronized KafkaProducer<byte[], byte[]> producer() {
        if (producer == null) {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-partition-admin-input");
            p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        }
        return producer;
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> out = new ArrayList<>();
        for (Node n : nodes) {
            out.add(n.id());
        }
        return out;
    }

    /** describeTopics by name: per topic its id, internal flag and partitions (leader, replicas, isr). */
    private Map<String, Object> describeTopics(List<String> topics, int limit) throws Exception {
        DescribeTopicsOptions options = new DescribeTopicsOptions();
        if (limit > 0) {
            options.partitionSizeLimitPerResponse(limit);
        }
        Map<String, Object> out = new TreeMap<>();
        var result = admin().describeTopics(topics, options).topicNameValues();
        for (String topic : topics) {
            try {
                TopicDescription d = result.get(topic).get(TIMEOUT_S, TimeUnit.SECONDS);
                List<Object> partitions = new ArrayList<>();
                for (TopicPartitionInfo p : d.partitions()) {
                    partitions.add(obj(
                            "partition", p.partition(),
                            "leader", p.leader() == null ? -1 : p.leader().id(),
                            "replicas", ids(p.replicas()),
                            "isr", ids(p.isr())));
                }
                out.put(topic, obj("topicId", d.topicId().toString(), "internal", d.isInternal(),
                        "partitions", partitions, "operations", String.valueOf(d.authorizedOperations())));
            } catch (ExecutionException e) {
                out.put(topic, obj("exception", e.getCause().getClass().getSimpleName()));
            }
        }
        return obj("topics", out);
    }

    /** electLeaders for partitions of one topic: per partition null (elected) or the exception's name. */
    private Map<String, Object> electLeaders(String type, String topic, List<String> partitions) throws Exception {
        Set<TopicPartition> tps = new HashSet<>();
        for (String p : partitions) {
            tps.add(new TopicPartition(topic, Integer.parseInt(p)));
        }
        Map<TopicPartition, Optional<Throwable>> results =
                admin().electLeaders(ElectionType.valueOf(type), tps).partitions().get(TIMEOUT_S, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, Optional<Throwable>> e : results.entrySet()) {
            out.put(String.valueOf(e.getKey().partition()), e.getValue().map(t -> t.getClass().getSimpleName()).orElse(null));
        }
        return obj("results", out);
    }

    /** describeLogDirs: per broker, per directory, its volume and each partition's size and lag. */
    private Map<String, Object> describeLogDirs(List<String> brokers) throws Exception {
        List<Integer> ids = new ArrayList<>();
        for (String b : brokers) {
            ids.add(Integer.parseInt(b));
        }
        Map<Integer, Map<String, LogDirDescription>> all =
                admin().describeLogDirs(ids).allDescriptions().get(TIMEOUT_S, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<Integer, Map<String, LogDirDescription>> broker : all.entrySet()) {
            Map<String, Object> dirs = new TreeMap<>();
            for (Map.Entry<String, LogDirDescription> dir : broker.getValue().entrySet()) {
                LogDirDescription d = dir.getValue();
                Map<String, Object> replicas = new TreeMap<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                    replicas.put(r.getKey().toString(), obj("size", r.getValue().size(),
                            "lag", r.getValue().offsetLag(), "future", r.getValue().isFuture()));
                }
                dirs.put(dir.getKey(), obj(
                        "error", d.error() == null ? null : d.error().getClass().getSimpleName(),
                        "total", d.totalBytes().orElse(-1L),
                        "usable", d.usableBytes().orElse(-1L),
                        "replicas", replicas));
            }
            out.put(String.valueOf(broker.getKey()), dirs);
        }
        return obj("brokers", out);
    }

    /** alterPartitionReassignments of one partition to replicas (comma-separated), or "cancel". */
    private Map<String, Object> reassign(String topic, int partition, String replicas) throws Exception {
        Optional<NewPartitionReassignment> target = Optional.empty();
        if (!"cancel".equals(replicas)) {
            List<Integer> ids = new ArrayList<>();
            for (String r : list(replicas)) {
                ids.add(Integer.parseInt(r));
            }
            target = Optional.of(new NewPartitionReassignment(ids));
        }
        TopicPartition tp = new TopicPartition(topic, partition);
        try {
            admin().alterPartitionReassignments(Map.of(tp, target)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            return obj("exception", null);
        } catch (ExecutionException e) {
            return obj("exception", e.getCause().getClass().getSimpleName());
        }
    }

    /** listPartitionReassignments of every partition: "topic-p" to replicas, adding, removing. */
    private Map<String, Object> listReassignments() throws Exception {
        Map<TopicPartition, PartitionReassignment> all =
                admin().listPartitionReassignments().reassignments().get(TIMEOUT_S, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, PartitionReassignment> e : all.entrySet()) {
            PartitionReassignment r = e.getValue();
            out.put(e.getKey().toString(), obj("replicas", r.replicas(), "adding", r.addingReplicas(),
                    "removing", r.removingReplicas()));
        }
        return obj("reassignments", out);
    }
}
