package fakebroker;

import static fakebroker.Lines.emit;
import static fakebroker.Lines.kafkaVersion;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.utf8;

import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Delegation tokens with the Java client (issue 37) for tests/clients/test_java_tokens.py.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.TokenScenarios BOOTSTRAP SCENARIO key=value...
 *
 *   lifecycle  topic= n=   as alice (SCRAM-SHA-512 over SASL_SSL): createDelegationToken (renewer
 *                          bob), describeDelegationToken; bob renews it, carol tries to; a producer
 *                          logged in with the token (ScramLoginModule ... tokenauth="true") sends n
 *                          records; an Admin logged in with the token asks for a token; alice
 *                          expires it; a producer with the expired token is refused; alice
 *                          describes again
 * </pre>
 *
 * The users' passwords are {@code <name>-secret}; ca= is the cluster's CA (PEM), mechanism= the
 * SCRAM mechanism (default SCRAM-SHA-512). One JSON object per stdout line (see
 * {@link Lines#emit}); the last is {"type":"end"}. A failure prints {"type":"error",...} and exits
 * 1. Every wait is bounded.
 */
public final class TokenScenarios {
    private static final long STEP_MS = 30_000;

    private TokenScenarios() {
    }

    public static void main(String[] args) {
        Lines.runScenario(args, (bootstrap, name, a) -> {
            if (!name.equals("lifecycle")) {
                throw new IllegalArgumentException("unknown scenario " + name);
            }
            lifecycle(bootstrap, a);
        });
    }

    /** SASL_SSL settings for {@code user} (a user's password, or a token's id and HMAC with tokenauth). */
    private static Properties secured(String bootstrap, Map<String, String> a, String clientId, String user,
            String password, boolean token) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put(SaslConfigs.SASL_MECHANISM, a.getOrDefault("mechanism", "SCRAM-SHA-512"));
        p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\"" : "") + ";");
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, a.get("ca"));
        return p;
    }

    private static Admin admin(String bootstrap, Map<String, String> a, String clientId, String user, String password,
            boolean token) {
        Properties p = secured(bootstrap, a, clientId, user, password, token);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        return Admin.create(p);
    }

    private static Admin userAdmin(String bootstrap, Map<String, String> a, String name) {
        return admin(bootstrap, a, "fakebroker-java-token-admin-" + name, name, name + "-secret", false);
    }

    private static KafkaProducer<byte[], byte[]> tokenProducer(String bootstrap, Map<String, String> a, String clientId,
            String tokenId, String hmac) {
        Properties p = secured(bootstrap, a, clientId, tokenId, hmac, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void lifecycle(String bootstrap, Map<String, String> a) throws Exception {
        String topic = a.get("topic");
        int n = Integer.parseInt(a.get("n"));
        DelegationToken token;
        try (Admin alice = userAdmin(bootstrap, a, "alice")) {
            CreateDelegationTokenOptions options = new CreateDelegationTokenOptions()
                    .renewers(List.of(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "bob")));
            token = alice.createDelegationToken(options).delegationToken().get(STEP_MS, TimeUnit.MILLISECONDS);
            emit(described("created", token));
            List<Map<String, Object>> listed = new ArrayList<>();
            for (DelegationToken t : alice.describeDelegationToken().delegationTokens().get(STEP_MS, TimeUnit.MILLISECONDS)) {
                listed.add(described("token", t));
            }
            emit(obj("type", "described", "by", "alice", "tokens", listed));
        }
        String tokenId = token.tokenInfo().tokenId();
        String hmac = Base64.getEncoder().encodeToString(token.hmac());

        try (Admin bob = userAdmin(bootstrap, a, "bob")) {  // a renewer
            long expiry = bob.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions().renewTimePeriodMs(3_600_000))
                    .expiryTimestamp().get(STEP_MS, TimeUnit.MILLISECONDS);
            emit(obj("type", "renewed", "by", "bob", "expiry", expiry));
            List<Map<String, Object>> listed = new ArrayList<>();
            DescribeDelegationTokenOptions own = new DescribeDelegationTokenOptions()
                    .owners(List.of(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "bob")));
            for (DelegationToken t : bob.describeDelegationToken(own).delegationTokens().get(STEP_MS, TimeUnit.MILLISECONDS)) {
                listed.add(described("token", t));
            }
            emit(obj("type", "described", "by", "bob", "tokens", listed));
        }
        try (Admin carol = userAdmin(bootstrap, a, "carol")) {  // neither owner nor renewer
            carol.renewDelegationToken(token.hmac()).expiryTimestamp().get(STEP_MS, TimeUnit.MILLISECONDS);
            emit(obj("type", "refused", "step", "carol-renews", "error", null, "message", null));
        } catch (ExecutionException e) {
            emit(refusal("carol-renews", e));
        }

        try (KafkaProducer<byte[], byte[]> producer = tokenProducer(bootstrap, a, "fakebroker-java-token-producer", tokenId, hmac)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, utf8("key-" + i), utf8("value-" + i))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = sent.get(i).get(STEP_MS, TimeUnit.MILLISECONDS);
                emit(obj("type", "sent", "i", i, "partition", md.partition(), "offset", md.offset()));
            }
        }
        try (Admin withToken = admin(bootstrap, a, "fakebroker-java-token-admin-token", tokenId, hmac, true)) {
            withToken.createDelegationToken().delegationToken().get(STEP_MS, TimeUnit.MILLISECONDS);
            emit(obj("type", "refused", "step", "token-creates", "error", null, "message", null));
        } catch (ExecutionException e) {
            emit(refusal("token-creates", e));
        }

        try (Admin alice = userAdmin(bootstrap, a, "alice")) {
            long expired = alice.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                    .expiryTimestamp().get(STEP_MS, TimeUnit.MILLISECONDS);
            emit(obj("type", "expired", "by", "alice", "expiry", expired));
            try {
                alice.renewDelegationToken(token.hmac()).expiryTimestamp().get(STEP_MS, TimeUnit.MILLISECONDS);
                emit(obj("type", "refused", "step", "renew-expired", "error", null, "message", null));
            } catch (ExecutionException e) {
                emit(refusal("renew-expired", e));
            }
            int left = alice.describeDelegationToken().delegationTokens().get(STEP_MS, TimeUnit.MILLISECONDS).size();
            emit(obj("type", "described", "by", "alice-after", "count", left));
        }
        try (KafkaProducer<byte[], byte[]> producer = tokenProducer(bootstrap, a, "fakebroker-java-expired-token-producer", tokenId, hmac)) {
            producer.partitionsFor(topic);
            emit(obj("type", "refused", "step", "expired-token-produces", "error", null, "message", null));
        } catch (Exception e) {
            emit(refusal("expired-token-produces", e));
        }
    }

    private static Map<String, Object> described(String type, DelegationToken token) {
        TokenInformation info = token.tokenInfo();
        List<String> renewers = new ArrayList<>();
        for (KafkaPrincipal p : info.renewers()) {
            renewers.add(p.toString());
        }
        return obj("type", type, "token_id", info.tokenId(), "owner", info.ownerAsString(),
                "requester", info.tokenRequesterAsString(), "renewers", renewers, "issue", info.issueTimestamp(),
                "expiry", info.expiryTimestamp(), "max", info.maxTimestamp(),
                "hmac", Base64.getEncoder().encodeToString(token.hmac()));
    }

    /** What a step was refused with: the exception's class and message (the cause's, for an ExecutionException). */
    private static Map<String, Object> refusal(String step, Exception e) {
        Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return obj("type", "refused", "step", step, "error", t.getClass().getName(), "message", t.getMessage());
    }
}
