package fakebroker;

import static fakebroker.Lines.emit;
import static fakebroker.Lines.kafkaVersion;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.utf8;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's transactional producer under ACLs (issue 37) for tests/clients/test_java_acls.py.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.AclScenarios BOOTSTRAP SCENARIO key=value...
 *
 *   txn   tid= topic= n=   initTransactions, then (if it succeeded) beginTransaction, send n records
 *                          (value-i) to partition 0, commitTransaction; each step's outcome a line:
 *                          {"type":"step","step":..,"error":class or null,"message":..}
 * </pre>
 *
 * The connection: SASL_PLAINTEXT with mechanism= (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), user=,
 * password=. One JSON object per stdout line (see {@link Lines#emit}); the last is {"type":"end"}.
 * An unexpected failure prints {"type":"error",...} and exits 1. Every wait is bounded.
 */
public final class AclScenarios {
    private AclScenarios() {
    }

    public static void main(String[] args) {
        Lines.runScenario(args, (bootstrap, name, a) -> {
            if (!name.equals("txn")) {
                throw new IllegalArgumentException("unknown scenario " + name);
            }
            txn(bootstrap, a);
        });
    }

    private static Properties secured(String bootstrap, Map<String, String> a, String clientId) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        String mechanism = a.get("mechanism");
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        p.put(SaslConfigs.SASL_MECHANISM, mechanism);
        p.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + a.get("user")
                + "\" password=\"" + a.get("password") + "\";");
        return p;
    }

    /** One step's outcome: its name, and the exception it threw (the cause of an ExecutionException), or none. */
    private static Map<String, Object> step(String name, Throwable e) {
        Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return obj("type", "step", "step", name, "error", t == null ? null : t.getClass().getName(),
                "message", t == null ? null : t.getMessage());
    }

    private static void txn(String bootstrap, Map<String, String> a) {
        Properties p = secured(bootstrap, a, "fakebroker-java-acl-producer");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.get("tid"));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "20000");
        int n = Integer.parseInt(a.get("n"));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            try {
                producer.initTransactions();
                emit(step("init", null));
            } catch (Exception e) {
                emit(step("init", e));
                try {
                    producer.beginTransaction(); // the producer is in its fatal state: refused too
                    emit(step("begin-after-failure", null));
                } catch (Exception again) {
                    emit(step("begin-after-failure", again));
                }
                return;
            }
            producer.beginTransaction();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = producer.send(new ProducerRecord<>(a.get("topic"), 0, null, utf8("value-" + i))).get();
                emit(obj("type", "sent", "i", i, "offset", md.offset()));
            }
            try {
                producer.commitTransaction();
                emit(step("commit", null));
            } catch (Exception e) {
                emit(step("commit", e));
            }
        } catch (Exception e) {
            emit(step("send", e));
        }
    }
}
