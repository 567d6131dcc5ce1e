package example.orders;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * The order consumer against a fake 3-broker cluster, with the bad days scripted over
 * fakebroker's HTTP control endpoint. One server for the class; every test has its own topic
 * and group. Each test checks what the service promises: every order handled exactly once,
 * and the committed offsets add up.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConsumerTest {

    static FakeBroker fb;

    /** On a failure, print the server's latest event lines (surefire shows them with the failure). */
    @RegisterExtension
    static final TestWatcher EVENTS_ON_FAILURE = new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            if (fb != null) {
                System.err.println("--- fakebroker serve, last lines ---\n" + fb.tail(80));
            }
        }
    };

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private final Map<String, Integer> handled = new ConcurrentHashMap<>(); // order id -> times handled

    @BeforeAll
    static void startFakeBroker() throws Exception {
        fb = FakeBroker.start(3);
    }

    @AfterAll
    static void stopFakeBroker() throws Exception {
        if (fb != null) {
            fb.close();
        }
    }

    @AfterEach
    void closeClients() {
        Collections.reverse(cleanup);
        for (AutoCloseable c : cleanup) {
            try {
                c.close();
            } catch (Exception e) {
                System.err.println("closing " + c + ": " + e);
            }
        }
    }

    // -- helpers a suite like this grows ---------------------------------------------------------
    /**
     * The consumers' settings in these tests, under each test's own: a consumer's close waits for
     * its fetch in flight and for the fetch that ends its fetch session, each a long poll of up to
     * fetch.max.wait.ms on an idle topic. 100 ms instead of the default 500 takes about a second
     * off every close; what the consumer reads and commits is the same.
     */
    private static final Map<String, Object> TEST_SETTINGS = Map.of(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);

    private OrderConsumer consumer(String groupId, String clientId, String topic, Map<String, Object> overrides) {
        Map<String, Object> settings = new HashMap<>(TEST_SETTINGS);
        settings.putAll(overrides);
        OrderConsumer c = new OrderConsumer(fb.bootstrap(), groupId, clientId, topic,
            (order, partition, offset) -> handled.merge(order.id(), 1, Integer::sum), settings);
        cleanup.add(c);
        return c.start();
    }

    private KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, fb.bootstrap());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "order-feed");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true); // no order stored twice while leaders move
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        cleanup.add(producer);
        return producer;
    }

    /** Orders first..first+n-1, order i to partition i % partitions; returns once all are acknowledged. */
    private static void send(KafkaProducer<String, String> producer, String topic, int first, int n, int partitions)
            throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int i = first; i < first + n; i++) {
            Order order = new Order("order-" + i, 100L * i);
            acks.add(producer.send(new ProducerRecord<>(topic, i % partitions, order.id(), order.encode())));
        }
        producer.flush();
        for (Future<RecordMetadata> ack : acks) {
            ack.get(60, TimeUnit.SECONDS);
        }
    }

    private static Set<String> orderIds(int from, int to) {
        Set<String> ids = new TreeSet<>();
        for (int i = from; i < to; i++) {
            ids.add("order-" + i);
        }
        return ids;
    }

    private List<String> handledTwice() {
        List<String> out = new ArrayList<>();
        handled.forEach((id, n) -> {
            if (n > 1) {
                out.add(id + " x" + n);
            }
        });
        return out;
    }

    private static Map<String, Long> committedTotal(String groupId, long total) throws InterruptedException {
        FakeBroker.until(total + " committed in " + groupId, Duration.ofSeconds(15),
            () -> fb.committed(groupId).values().stream().mapToLong(Long::longValue).sum() == total);
        return fb.committed(groupId);
    }

    private static Map<String, Object> stable(String groupId, int members) {
        return Map.of("group", groupId, "state", "Stable", "members", members);
    }

    private static Map<String, Object> stableAfter(String groupId, int members, int generation) {
        Map<String, Object> params = new HashMap<>(stable(groupId, members));
        params.put("generation_above", generation);
        return params;
    }

    // -- the tests -------------------------------------------------------------------------------
    @Test
    void heartbeatRebalanceErrorsMakeTheMembersRejoinAndEveryOrderIsHandledOnce() throws Exception {
        String topic = "orders-hb", groupId = "orders-hb";
        fb.createTopic(topic, 6, 3);
        KafkaProducer<String, String> producer = producer();
        OrderConsumer a = consumer(groupId, "orders-a", topic, Map.of());
        OrderConsumer b = consumer(groupId, "orders-b", topic, Map.of());
        JsonNode first = fb.waitFor("group_state", stable(groupId, 2), 20);
        send(producer, topic, 0, 300, 6);
        FakeBroker.until("the first 300 orders", Duration.ofSeconds(20), () -> handled.size() >= 300);
        committedTotal(groupId, 300);
        int assignmentsBefore = a.assignments() + b.assignments();

        JsonNode rule = fb.addFault(Map.of("api", "Heartbeat", "group", groupId, "error", "REBALANCE_IN_PROGRESS", "times", 3));
        FakeBroker.until("three heartbeat errors", Duration.ofSeconds(15), () -> fb.fault(rule.path("id").asLong()).path("fired").asInt() >= 3);
        JsonNode later = fb.waitFor("group_state", stableAfter(groupId, 2, first.path("generation").asInt()), 20);
        send(producer, topic, 300, 300, 6);
        FakeBroker.until("all 600 orders", Duration.ofSeconds(20), () -> handled.size() >= 600);
        Map<String, Long> offsets = committedTotal(groupId, 600);

        assertTrue(later.path("generation").asInt() > first.path("generation").asInt(), "a new generation");
        assertTrue(a.assignments() + b.assignments() >= assignmentsBefore + 2, "both members rejoined");
        assertEquals(6, a.partitions().size() + b.partitions().size(), "all partitions owned again");
        assertEquals(orderIds(0, 600), new TreeSet<>(handled.keySet()));
        assertEquals(List.of(), handledTwice(), "no order handled twice");
        assertEquals(6, offsets.size());
        offsets.values().forEach(o -> assertEquals(100L, o));
        JsonNode fired = fb.events("fault_fired", groupId, null);
        assertEquals(3, fired.size());
        fired.forEach(e -> assertEquals("REBALANCE_IN_PROGRESS", e.path("details").path("error").asText()));
        assertNull(a.failure());
        assertNull(b.failure());
    }

    @Test
    void aPartitionLeaderStoppedAndStartedMidStreamLosesNoOrder() throws Exception {
        String topic = "orders-bounce", groupId = "orders-bounce";
        int total = 600;
        fb.createTopic(topic, 6, 3);
        KafkaProducer<String, String> producer = producer();
        OrderConsumer a = consumer(groupId, "orders-a", topic, Map.of());
        OrderConsumer b = consumer(groupId, "orders-b", topic, Map.of());
        int coordinator = fb.waitFor("group_state", stable(groupId, 2), 20).path("coordinator").asInt();
        // a broker that leads partitions of the topic but does not coordinate the group
        List<Integer> leaders = new ArrayList<>();
        fb.topic(topic).path("partitions").forEach(p -> leaders.add(p.path("leader").asInt()));
        int victim = leaders.stream().filter(id -> id != coordinator).findFirst().orElseThrow();
        long led = leaders.stream().filter(id -> id == victim).count();
        cleanup.add(() -> { // whatever happened, leave all three brokers up for the next test
            for (JsonNode broker : fb.brokers()) {
                if (broker.path("id").asInt() == victim && !broker.path("alive").asBoolean()) {
                    fb.startBroker(victim);
                }
            }
        });

        AtomicInteger sent = new AtomicInteger();
        CompletableFuture<Void> feed = CompletableFuture.runAsync(() -> { // a steady stream, 6 orders at a time
            try {
                for (int i = 0; i < total; i += 6) {
                    send(producer, topic, i, 6, 6);
                    sent.addAndGet(6);
                    Thread.sleep(10);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        FakeBroker.until("a first share handled", Duration.ofSeconds(20), () -> handled.size() >= 150);
        JsonNode stopped = fb.stopBroker(victim);
        int sentAtStop = sent.get();
        List<Integer> leadersWhileDown = new ArrayList<>();
        fb.topic(topic).path("partitions").forEach(p -> leadersWhileDown.add(p.path("leader").asInt()));
        FakeBroker.until("orders sent and handled while the broker is down", Duration.ofSeconds(20),
            () -> sent.get() >= sentAtStop + 120 && handled.size() >= sentAtStop + 60);
        JsonNode started = fb.startBroker(victim);
        int moved = fb.electPreferredLeaders();
        feed.get(40, TimeUnit.SECONDS);
        FakeBroker.until("all " + total + " orders", Duration.ofSeconds(30), () -> handled.size() >= total);
        committedTotal(groupId, total);

        assertEquals(false, stopped.path("alive").asBoolean());
        assertEquals(true, started.path("alive").asBoolean());
        assertTrue(sentAtStop < total, "stopped in the middle of the stream");
        assertTrue(!leadersWhileDown.contains(victim) && !leadersWhileDown.contains(-1), "leaders while down: " + leadersWhileDown);
        assertTrue(moved >= led, moved + " leaders moved back to broker " + victim + ", which led " + led);
        assertEquals(orderIds(0, total), new TreeSet<>(handled.keySet()), "no order lost");
        assertEquals(List.of(), handledTwice(), "no order handled twice");
        List<String> brokerEvents = new ArrayList<>();
        fb.events("broker_stopped,broker_started", null, null).forEach(e -> {
            if (e.path("broker").asInt() == victim) {
                brokerEvents.add(e.path("kind").asText());
            }
        });
        assertEquals(List.of("broker_stopped", "broker_started"), brokerEvents.subList(brokerEvents.size() - 2, brokerEvents.size()));
        assertNull(a.failure());
        assertNull(b.failure());
    }

    @Test
    void aBlackHoledSyncGroupMakesTheNewMemberTimeOutAndRejoin() throws Exception {
        String topic = "orders-sync", groupId = "orders-sync";
        fb.createTopic(topic, 6, 1);
        KafkaProducer<String, String> producer = producer();
        OrderConsumer a = consumer(groupId, "orders-a", topic, Map.of());
        OrderConsumer b = consumer(groupId, "orders-b", topic, Map.of());
        int firstGeneration = fb.waitFor("group_state", stable(groupId, 2), 20).path("generation").asInt();

        // c's first SyncGroup is swallowed and its connection goes unread for 4 s; c gives up after
        // its 2 s request timeout and joins again
        JsonNode rule = fb.addFault(Map.of("api", "SyncGroup", "group", groupId, "client_id", "orders-c",
            "action", "blackhole", "duration", 4, "times", 1));
        long started = System.nanoTime();
        OrderConsumer c = consumer(groupId, "orders-c", topic, Map.of("request.timeout.ms", 2000));
        FakeBroker.until("c owns partitions", Duration.ofSeconds(25), () -> c.partitions().size() == 2);
        double waited = (System.nanoTime() - started) / 1e9;
        JsonNode group = fb.waitFor("group_state", stableAfter(groupId, 3, firstGeneration), 20);
        send(producer, topic, 0, 300, 6);
        FakeBroker.until("all 300 orders", Duration.ofSeconds(20), () -> handled.size() >= 300);
        Map<String, Long> offsets = committedTotal(groupId, 300);

        assertEquals(1, fb.fault(rule.path("id").asLong()).path("fired").asInt());
        JsonNode fired = fb.events("fault_fired", groupId, "orders-c");
        assertEquals(1, fired.size());
        assertEquals("blackhole", fired.get(0).path("details").path("action").asText());
        assertTrue(waited >= 2.0, "c waited out its request timeout: " + waited + " s");
        // c's first join started one generation; its rejoin after the timeout another
        assertTrue(group.path("generation").asInt() >= firstGeneration + 2, "generation " + group.path("generation"));
        assertEquals(List.of(2, 2, 2), List.of(a.partitions().size(), b.partitions().size(), c.partitions().size()));
        for (JsonNode member : group.path("members")) {
            assertEquals(2, member.path("assignment").path(topic).size(), member.toString());
        }
        assertEquals(orderIds(0, 300), new TreeSet<>(handled.keySet()));
        assertEquals(List.of(), handledTwice(), "no order handled twice");
        offsets.values().forEach(o -> assertEquals(50L, o));
        assertNotEquals(0, a.partitions().size());
        assertNull(c.failure());
    }
}
