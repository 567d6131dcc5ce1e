package example.orders;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The code under test: an order consumer as a service team writes one with kafka-clients.
 * One thread polls, hands each order to the {@link Handler}, and commits what it handled
 * after every poll and, synchronously, before it gives partitions away in a rebalance, so a
 * rebalance never makes another member handle an order again.
 */
public final class OrderConsumer implements AutoCloseable {

    /** Handles one order; runs on the consumer's thread. */
    @FunctionalInterface
    public interface Handler {
        void handle(Order order, int partition, long offset) throws Exception;
    }

    private final KafkaConsumer<String, String> consumer;
    private final String topic;
    private final Handler handler;
    private final Map<TopicPartition, OffsetAndMetadata> handled = new HashMap<>(); // not yet committed
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicInteger assignments = new AtomicInteger();
    private final Thread thread;
    private volatile Set<Integer> partitions = Set.of();
    private volatile Throwable failure;

    /**
     * @param overrides consumer settings on top of the service's own (timeouts, mostly)
     */
    public OrderConsumer(String bootstrap, String groupId, String clientId, String topic, Handler handler,
                         Map<String, Object> overrides) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        props.putAll(overrides);
        this.consumer = new KafkaConsumer<>(props);
        this.topic = topic;
        this.handler = handler;
        this.thread = new Thread(this::run, "order-consumer-" + clientId);
        this.thread.setDaemon(true);
    }

    public OrderConsumer start() {
        thread.start();
        return this;
    }

    /** The partitions this member owns now. */
    public Set<Integer> partitions() {
        return partitions;
    }

    /** How many assignments this member has received (one per rebalance it took part in). */
    public int assignments() {
        return assignments.get();
    }

    /** What ended the poll loop, if anything did. */
    public Throwable failure() {
        return failure;
    }

    private void run() {
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<TopicPartition> revoked) {
                commitHandled(); // before anyone else gets these partitions
                partitions = Set.of();
            }

            @Override
            public void onPartitionsAssigned(java.util.Collection<TopicPartition> assigned) {
                Set<Integer> mine = new TreeSet<>();
                assigned.forEach(tp -> mine.add(tp.partition()));
                partitions = Set.copyOf(mine);
                assignments.incrementAndGet();
            }

            @Override
            public void onPartitionsLost(java.util.Collection<TopicPartition> lost) {
                lost.forEach(handled::remove); // no longer ours to commit
                partitions = Set.of();
            }
        });
        try {
            while (running.get()) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    handler.handle(Order.parse(r.value()), r.partition(), r.offset());
                    handled.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                commitHandled();
            }
        } catch (WakeupException e) {
            // close() asked us to stop
        } catch (Throwable t) {
            failure = t;
        } finally {
            try {
                commitHandled();
            } catch (RuntimeException e) {
                // the group is gone or moving; the next owner starts from the last commit
            }
            consumer.close(Duration.ofSeconds(5)); // leaves the group
        }
    }

    private void commitHandled() {
        if (handled.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(handled);
            handled.clear();
        } catch (RebalanceInProgressException e) {
            // a rebalance is under way: the next poll revokes, and onPartitionsRevoked commits
        } catch (CommitFailedException e) {
            handled.clear(); // this member was removed from the group; those records go to the next owner
        }
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        consumer.wakeup();
        thread.join(15_000);
    }
}
