package fakebroker;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Admin client's feature, quota and quorum APIs (describeFeatures, updateFeatures,
 * alterClientQuotas, describeClientQuotas, describeMetadataQuorum), plus producers that show
 * what those change: a throttled burst (its produce-throttle-time metrics) and a transaction.
 * Commands in the line protocol of {@link Lines}.
 */
public final class QuotaFeatureScenarios {
    private final String bootstrap;
    private Admin admin;

    private QuotaFeatureScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        QuotaFeatureScenarios driver = new QuotaFeatureScenarios(args[0]);
        Lines.serve(driver::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "describeFeatures":
                return describeFeatures();
            case "updateFeature":
                return updateFeature(a);
            case "alterQuota":
                return alterQuota(a);
            case "describeQuotas":
                return describeQuotas(a);
            case "describeQuorum":
                return describeQuorum();
            case "burst":
                return burst(a);
            case "txn":
                return txn(a);
            case "exit":
                if (admin != null) {
                    admin.close();
                }
                return Lines.obj("ok", true);
            default:
                return null;
        }
    }

    private synchronized Admin admin() {
        if (admin == null) {
            admin = Lines.admin(bootstrap, "admin-java");
        }
        return admin;
    }

    private Map<String, Object> describeFeatures() throws Exception {
        FeatureMetadata m = admin().describeFeatures().featureMetadata().get();
        Map<String, Object> finalized = new TreeMap<>();
        for (Map.Entry<String, FinalizedVersionRange> e : m.finalizedFeatures().entrySet()) {
            finalized.put(e.getKey(), (int) e.getValue().maxVersionLevel());
        }
        Map<String, Object> supported = new TreeMap<>();
        for (Map.Entry<String, SupportedVersionRange> e : m.supportedFeatures().entrySet()) {
            supported.put(e.getKey(), List.of((int) e.getValue().minVersion(), (int) e.getValue().maxVersion()));
        }
        return Lines.obj("finalized", finalized, "supported", supported,
                "epoch", m.finalizedFeaturesEpoch().orElse(-1L));
    }

    /** name, level, type (upgrade | safe | unsafe), validateOnly: ok, or the error's class and message. */
    private Map<String, Object> updateFeature(Map<String, String> a) throws InterruptedException {
        FeatureUpdate.UpgradeType type = switch (a.getOrDefault("type", "upgrade")) {
            case "safe" -> FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
            case "unsafe" -> FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE;
            default -> FeatureUpdate.UpgradeType.UPGRADE;
        };
        FeatureUpdate update = new FeatureUpdate(Short.parseShort(a.get("level")), type);
        UpdateFeaturesOptions options = new UpdateFeaturesOptions()
                .validateOnly(Boolean.parseBoolean(a.getOrDefault("validateOnly", "false")));
        try {
            admin().updateFeatures(Map.of(a.get("name"), update), options).all().get();
            return Lines.obj("ok", true);
        } catch (ExecutionException e) {
            return Lines.obj("ok", false, "exception", e.getCause().getClass().getSimpleName(),
                    "message", e.getCause().getMessage());
        }
    }

    /** "client-id:svc,user:" -> {client-id=svc, user=null} (an empty name is the default entity). */
    private static Map<String, String> entity(String text) {
        Map<String, String> m = new HashMap<>();
        for (String part : Lines.list(text)) {
            int colon = part.indexOf(':');
            String name = part.substring(colon + 1);
            m.put(part.substring(0, colon), name.isEmpty() ? null : name);
        }
        return m;
    }

    private static String entityText(ClientQuotaEntity entity) {
        return new TreeMap<>(entity.entries()).toString();
    }

    /** entity, key, value (absent: remove), validateOnly. */
    private Map<String, Object> alterQuota(Map<String, String> a) {
        Double value = a.containsKey("value") ? Double.valueOf(a.get("value")) : null;
        ClientQuotaAlteration alteration = new ClientQuotaAlteration(new ClientQuotaEntity(entity(a.get("entity"))),
                List.of(new ClientQuotaAlteration.Op(a.get("key"), value)));
        try {
            admin().alterClientQuotas(List.of(alteration),
                    new org.apache.kafka.clients.admin.AlterClientQuotasOptions()
                            .validateOnly(Boolean.parseBoolean(a.getOrDefault("validateOnly", "false"))))
                    .all().get();
            return Lines.obj("ok", true);
        } catch (Exception e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            return Lines.obj("ok", false, "exception", cause.getClass().getSimpleName(), "message", cause.getMessage());
        }
    }

    /** type and name (exact), type and default=true, or type alone (any name); strict; none: every quota. */
    private Map<String, Object> describeQuotas(Map<String, String> a) throws Exception {
        ClientQuotaFilter filter;
        if (!a.containsKey("type")) {
            filter = ClientQuotaFilter.all();
        } else {
            String type = a.get("type");
            ClientQuotaFilterComponent component = a.containsKey("name")
                    ? ClientQuotaFilterComponent.ofEntity(type, a.get("name"))
                    : a.containsKey("default") ? ClientQuotaFilterComponent.ofDefaultEntity(type)
                    : ClientQuotaFilterComponent.ofEntityType(type);
            filter = Boolean.parseBoolean(a.getOrDefault("strict", "false"))
                    ? ClientQuotaFilter.containsOnly(List.of(component))
                    : ClientQuotaFilter.contains(List.of(component));
        }
        Map<ClientQuotaEntity, Map<String, Double>> found = admin().describeClientQuotas(filter).entities().get();
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : found.entrySet()) {
            out.put(entityText(e.getKey()), new TreeMap<>(e.getValue()));
        }
        return Lines.obj("quotas", out);
    }

    private Map<String, Object> describeQuorum() throws Exception {
        QuorumInfo q = admin().describeMetadataQuorum().quorumInfo().get();
        List<Object> voters = new ArrayList<>();
        for (QuorumInfo.ReplicaState r : q.voters()) {
            voters.add(Lines.obj("id", r.replicaId(), "logEndOffset", r.logEndOffset(),
                    "lastCaughtUp", r.lastCaughtUpTimestamp().orElse(-1L)));
        }
        List<Object> observers = new ArrayList<>();
        for (QuorumInfo.ReplicaState r : q.observers()) {
            observers.add(r.replicaId());
        }
        List<Object> nodes = new ArrayList<>();
        for (Map.Entry<Integer, QuorumInfo.Node> n : new TreeMap<>(q.nodes()).entrySet()) {
            List<Object> listeners = new ArrayList<>();
            for (var endpoint : n.getValue().endpoints()) {
                listeners.add(endpoint.listener());
            }
            nodes.add(Lines.obj("id", n.getKey(), "listeners", listeners));
        }
        return Lines.obj("leaderId", q.leaderId(), "leaderEpoch", q.leaderEpoch(), "highWatermark", q.highWatermark(),
                "voters", voters, "observers", observers, "nodes", nodes);
    }

    private KafkaProducer<byte[], byte[]> producer(String clientId, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    /** clientId, topic, n records of size bytes, one at a time (each acknowledged before the next):
     *  elapsed ms and the producer's throttle metrics. */
    private Map<String, Object> burst(Map<String, String> a) throws Exception {
        int n = Lines.num(a, "n", 10);
        byte[] value = new byte[Lines.num(a, "size", 10_000)];
        try (KafkaProducer<byte[], byte[]> producer = producer(a.get("clientId"), Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(a.get("topic"), 0, null, value)).get();
            }
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            Map<String, Object> metrics = new TreeMap<>();
            for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
                MetricName name = e.getKey();
                if (name.group().equals("producer-metrics") && name.name().startsWith("produce-throttle-time")) {
                    metrics.put(name.name(), e.getValue().metricValue());
                }
            }
            return Lines.obj("elapsedMs", elapsed, "metrics", metrics);
        }
    }

    /** tid, topic: one committed transaction of one record by a fresh transactional producer. */
    private Map<String, Object> txn(Map<String, String> a) throws Exception {
        Map<String, String> props = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.get("tid"));
        try (KafkaProducer<byte[], byte[]> producer = producer("admin-java-txn", props)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(a.get("topic"), 0, null, Lines.utf8("txn"))).get();
            producer.commitTransaction();
        }
        return Lines.obj("ok", true);
    }
}
