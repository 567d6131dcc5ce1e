package fakebroker;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stand-alone Kafka Streams word count, one process per instance, as a team ships its app: the
 * churn tests (tests/clients/test_streams_churn_java.py) start, stop (SIGTERM: the shutdown hook
 * closes it, leaving the group) and stall (SIGSTOP/SIGCONT) whole processes of it.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.WordCountApp BOOTSTRAP APP INPUT OUTPUT CLIENT_ID STATE_DIR [PROTOCOL]
 * </pre>
 *
 * lines of INPUT -> words -> groupBy(word) (a repartition topic) -> count (a changelog) -> OUTPUT
 * (word, count as a long), on a streams group (PROTOCOL "streams", the default) or a classic group
 * ("classic": the client's own assignor, a 6 s session timeout), with exactly-once v2, one
 * stream thread, no record cache and a 100 ms commit interval. Each state change is printed as
 * "state TO".
 */
public final class WordCountApp {
    private WordCountApp() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 6 && args.length != 7) {
            System.err.println("usage: BOOTSTRAP APP INPUT OUTPUT CLIENT_ID STATE_DIR [PROTOCOL]");
            System.exit(2);
        }
        String bootstrap = args[0], app = args[1], input = args[2], output = args[3];
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        String protocol = args.length == 7 ? args[6] : "streams";
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            // a classic Streams consumer does not leave the group on close: a restarted instance's
            // old member goes at its session timeout, the client's here (Kafka's default is 45 s)
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        }
        props.put(StreamsConfig.CLIENT_ID_CONFIG, args[4]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((to, from) -> System.out.println("state " + to));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
