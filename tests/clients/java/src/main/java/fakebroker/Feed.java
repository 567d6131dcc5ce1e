package fakebroker;

import static fakebroker.Lines.describe;
import static fakebroker.Lines.num;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.utf8;
import static fakebroker.Lines.waitFor;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * Input records for GroupScenarios and TxnScenarios: key "key-I", value "value-I" on partition
 * I % partitions, produced at once ("produce") or as a paced stream on a thread of its own
 * ("produceStream", then "waitProduced" and "waitStream"). Every wait is bounded.
 */
final class Feed {
    private final Supplier<KafkaProducer<byte[], byte[]>> producer;
    private volatile int produced;
    private volatile Throwable streamError;
    private Thread stream;

    /** {@code producer} gives the (plain) producer to use, made when first asked for. */
    Feed(Supplier<KafkaProducer<byte[], byte[]>> producer) {
        this.producer = producer;
    }

    /** The reply to one of the feed's commands, or null when {@code cmd} is not one of them. */
    Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "produce":
                send(producer.get(), a.get("topic"), num(a, "first", 0), num(a, "n", 0), num(a, "partitions", 6));
                return obj("produced", num(a, "n", 0));
            case "produceStream":
                return produceStream(a.get("topic"), num(a, "first", 0), num(a, "n", 0), num(a, "partitions", 6),
                        num(a, "chunk", 6), num(a, "intervalMs", 20));
            case "waitProduced":
                waitFor("streamed records", num(a, "timeoutMs", 30000), () -> produced >= num(a, "count", 0) || streamError != null);
                checkStream();
                return obj("produced", produced);
            case "waitStream":
                stream.join(num(a, "timeoutMs", 30000));
                checkStream();
                if (stream.isAlive()) {
                    throw new IllegalStateException("stream did not finish");
                }
                return obj("produced", produced);
            default:
                return null;
        }
    }

    /** Sends key-I/value-I to partition I % partitions and waits for every acknowledgement. */
    static void send(KafkaProducer<byte[], byte[]> producer, String topic, int from, int n, int partitions)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, i % partitions, utf8("key-" + i), utf8("value-" + i))));
        }
        producer.flush();
        for (Future<RecordMetadata> f : futures) {
            f.get(20, TimeUnit.SECONDS);
        }
    }

    private Map<String, Object> produceStream(String topic, int from, int n, int partitions, int chunk, int intervalMs) {
        produced = 0;
        streamError = null;
        stream = new Thread(() -> {
            try {
                for (int i = from; i < from + n; i += chunk) {
                    int size = Math.min(chunk, from + n - i);
                    send(producer.get(), topic, i, size, partitions);
                    produced += size;
                    Thread.sleep(intervalMs);
                }
            } catch (Throwable t) {
                streamError = t;
            }
        }, "stream");
        stream.setDaemon(true);
        stream.start();
        return obj();
    }

    private void checkStream() {
        if (streamError != null) {
            throw new IllegalStateException("stream failed: " + describe(streamError));
        }
    }
}
