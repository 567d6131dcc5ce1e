package fakebroker;

import static fakebroker.Lines.emit;
import static fakebroker.Lines.kafkaVersion;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.text;
import static fakebroker.Lines.utf8;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client over SASL_SSL (issue 37) for tests/clients/test_java_security.py.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.SecurityScenarios BOOTSTRAP SCENARIO key=value...
 *
 *   round-trip      topic= group= n=   produce n records (key-i, value-i on partition i % partitions,
 *                  [gap=]              gap ms apart), then subscribe in group, poll until n are read, commitSync
 *   wrong-password  topic= group=      a producer (partitionsFor) and a consumer (poll) with the
 *                                      credentials given, each reporting the exception it gets
 *   untrusted       topic=             a producer (partitionsFor) without ca=: the JDK's own trust
 *                                      store, which does not know the cluster's CA
 * </pre>
 *
 * The connection settings are key=value arguments too: protocol= (default SASL_SSL), mechanism=
 * (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER: an unsecured token for user= living lifetime= s,
 * or with token_file= the signed token in that file, read by OAuthBearerLoginCallbackHandler),
 * user=, password=, ca= (a PEM file: the truststore, with
 * ssl.truststore.type=PEM, or ca_type= PKCS12 or JKS with ca_password=; hostname verification stays
 * Kafka's default, https), keystore= (a PEM file holding a PKCS#8 key and its certificate chain:
 * mutual TLS, ssl.keystore.type=PEM, or keystore_type= PKCS12 or JKS with keystore_password=). The first line
 * after the version, {"type":"settings",...}, shows the settings as the client resolved them.
 *
 * One JSON object per stdout line (see {@link Lines#emit}); the last is {"type":"end"}. A failure
 * prints {"type":"error",...} and exits 1. Every wait is bounded.
 */
public final class SecurityScenarios {
    private static final Duration STEP = Duration.ofSeconds(30);

    private SecurityScenarios() {
    }

    public static void main(String[] args) {
        Lines.runScenario(args, (bootstrap, name, a) -> {
            Properties settings = secured(bootstrap, a, "settings");
            settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            ProducerConfig resolved = new ProducerConfig(settings);
            emit(obj("type", "settings",
                    "security_protocol", resolved.getString(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG),
                    "sasl_mechanism", resolved.getString(SaslConfigs.SASL_MECHANISM),
                    "truststore_type", resolved.getString(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG),
                    "endpoint_identification", resolved.getString(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG)));
            switch (name) {
                case "round-trip":
                    roundTrip(bootstrap, a);
                    break;
                case "wrong-password":
                    wrongPassword(bootstrap, a);
                    break;
                case "untrusted":
                    untrusted(bootstrap, a);
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + name);
            }
        });
    }

    /** The security settings every client of a scenario shares. */
    private static Properties secured(String bootstrap, Map<String, String> a, String clientId) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId);
        String protocol = a.getOrDefault("protocol", "SASL_SSL");
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol);
        if (protocol.startsWith("SASL_") && a.get("mechanism").equals("OAUTHBEARER") && a.containsKey("token_file")) {
            // a signed token that Kafka's login callback handler reads from a file (as 4.4 allows
            // once the allowed-URLs system property names it); the broker checks it against its JWKS
            String url = java.nio.file.Path.of(a.get("token_file")).toUri().toString();
            System.setProperty("org.apache.kafka.sasl.oauthbearer.allowed.urls", url);
            p.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
            p.put(SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS,
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
            p.put(SaslConfigs.SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, url);
            p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
        } else if (protocol.startsWith("SASL_") && a.get("mechanism").equals("OAUTHBEARER")) {
            // Kafka's unsecured token (alg none), refreshed by the login module at 80-85 % of lifetime=
            p.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
            p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
                    + " required unsecuredLoginStringClaim_sub=\"" + a.get("user") + "\" unsecuredLoginLifetimeSeconds=\""
                    + a.getOrDefault("lifetime", "3600") + "\";");
        } else if (protocol.startsWith("SASL_")) {
            String mechanism = a.get("mechanism");
            String module = mechanism.equals("PLAIN")
                    ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                    : "org.apache.kafka.common.security.scram.ScramLoginModule";
            p.put(SaslConfigs.SASL_MECHANISM, mechanism);
            p.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + a.get("user")
                    + "\" password=\"" + a.get("password") + "\";");
        }
        if (protocol.endsWith("SSL") && a.containsKey("ca")) {
            p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, a.getOrDefault("ca_type", "PEM"));
            p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, a.get("ca"));
            if (a.containsKey("ca_password")) {  // a PKCS12 or JKS truststore's
                p.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, a.get("ca_password"));
            }
            // ssl.endpoint.identification.algorithm is left at its default, https
        }
        if (protocol.endsWith("SSL") && a.containsKey("keystore")) {  // mutual TLS: key and chain (PEM by default)
            p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, a.getOrDefault("keystore_type", "PEM"));
            p.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, a.get("keystore"));
            if (a.containsKey("keystore_password")) {  // a PKCS12 or JKS keystore's
                p.put(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, a.get("keystore_password"));
            }
        }
        return p;
    }

    // -- round-trip -------------------------------------------------------------------------

    private static void roundTrip(String bootstrap, Map<String, String> a) throws Exception {
        String topic = a.get("topic");
        int n = Integer.parseInt(a.get("n"));
        Properties p = secured(bootstrap, a, "fakebroker-java-secure-producer");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        int partitions;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            partitions = producer.partitionsFor(topic).size();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, utf8("key-" + i), utf8("value-" + i))));
                Thread.sleep(Long.parseLong(a.getOrDefault("gap", "0")));  // records spread over time (re-authentication)
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = sent.get(i).get(STEP.toMillis(), TimeUnit.MILLISECONDS);
                emit(obj("type", "sent", "i", i, "partition", md.partition(), "offset", md.offset()));
            }
        }

        Properties c = secured(bootstrap, a, "fakebroker-java-secure-consumer");
        c.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            int read = 0;
            long deadline = System.nanoTime() + STEP.toNanos();
            while (read < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    read++;
                    emit(obj("type", "record", "partition", r.partition(), "offset", r.offset(), "key", text(r.key()),
                            "value", text(r.value())));
                }
            }
            consumer.commitSync(STEP);
            Set<TopicPartition> tps = new HashSet<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            Map<String, Object> committed = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : consumer.committed(tps, STEP).entrySet()) {
                committed.put(String.valueOf(e.getKey().partition()), e.getValue() == null ? null : e.getValue().offset());
            }
            emit(obj("type", "committed", "read", read, "offsets", committed));
        }
    }

    // -- wrong-password ---------------------------------------------------------------------

    private static void wrongPassword(String bootstrap, Map<String, String> a) {
        Properties p = secured(bootstrap, a, "fakebroker-java-refused-producer");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.partitionsFor(a.get("topic"));
            emit(obj("type", "refused", "client", "producer", "error", null, "message", null));
        } catch (Exception e) {
            emit(refusal("producer", e));
        }

        Properties c = secured(bootstrap, a, "fakebroker-java-refused-consumer");
        c.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(a.get("topic")));
            long deadline = System.nanoTime() + STEP.toNanos();
            while (System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)); // must throw: the consumer cannot authenticate
            }
            emit(obj("type", "refused", "client", "consumer", "error", null, "message", null));
        } catch (Exception e) {
            emit(refusal("consumer", e));
        }
    }

    // -- untrusted --------------------------------------------------------------------------

    private static void untrusted(String bootstrap, Map<String, String> a) {
        Properties p = secured(bootstrap, a, "fakebroker-java-untrusting-producer");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.partitionsFor(a.get("topic"));
            emit(obj("type", "refused", "client", "producer", "error", null, "message", null, "cause", null));
        } catch (Exception e) {
            Map<String, Object> line = refusal("producer", e);
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            line.put("cause", root.getClass().getName() + ": " + root.getMessage());
            emit(line);
        }
    }

    /** What a client was refused with: the exception's class and message (the cause's, for an ExecutionException). */
    private static Map<String, Object> refusal(String client, Exception e) {
        Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return obj("type", "refused", "client", client, "error", t.getClass().getName(), "message", t.getMessage());
    }
}
