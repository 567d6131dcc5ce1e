package fakebroker;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * An exactly-once consume-transform-produce app for tests/clients/test_java_transactions.py: several
 * workers in one JVM (a thread each), each a read_committed KafkaConsumer of one group plus a
 * transactional KafkaProducer, and bare transactional producers for step-by-step scenarios.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.TxnScenarios BOOTSTRAP
 * </pre>
 *
 * Each stdin line is {@code ID COMMAND key=value...}; each gets exactly one JSON reply line
 * {@code {"type":"reply","id":ID,...}} ("error" when the command itself failed). A worker's loop is
 * the one the KafkaProducer javadoc prescribes: poll, begin, send the transformed records (key
 * "key-I", value "value-I" becomes "done-I", same partition), sendOffsetsToTransaction with the
 * consumer's group metadata, commit. ProducerFencedException and the other fatal errors close the
 * worker (note "fatal"); any other KafkaException aborts the transaction and rewinds the consumer
 * to its committed offsets (note "aborted"). Every wait is bounded.
 */
public final class TxnScenarios {
    private static final PrintStream OUT = System.out;
    private static final long T0 = System.nanoTime();
    private static final Duration API_TIMEOUT = Duration.ofSeconds(15);

    private final String bootstrap;
    private final Map<String, Worker> workers = new ConcurrentHashMap<>();
    private final Map<String, KafkaProducer<byte[], byte[]>> producers = new ConcurrentHashMap<>();
    private KafkaProducer<byte[], byte[]> plain;
    private volatile int produced;
    private volatile Throwable streamError;
    private Thread stream;

    private TxnScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        TxnScenarios driver = new TxnScenarios(args[0]);
        emit(obj("type", "version", "kafka_clients", kafkaVersion(), "java", System.getProperty("java.version")));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            String cmd = parts[1];
            Map<String, String> a = new HashMap<>();
            for (int i = 2; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                a.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
            }
            Map<String, Object> reply;
            try {
                reply = driver.run(cmd, a);
            } catch (Throwable t) {
                t.printStackTrace();
                reply = obj("error", describe(t));
            }
            Map<String, Object> out = obj("type", "reply", "id", Integer.parseInt(parts[0]));
            out.putAll(reply);
            emit(out);
            if (cmd.equals("exit")) {
                break;
            }
        }
        OUT.flush();
        System.exit(0);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "produce": // plain (idempotent, not transactional) input records, acknowledged
                produceRange(a.get("topic"), num(a, "first", 0), num(a, "n", 0), num(a, "partitions", 6));
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
            case "start":
                return start(a);
            case "hold": // the worker's next transaction stops before its commit until "release"
                worker(a.get("name")).holdNext = true;
                return obj();
            case "release":
                worker(a.get("name")).release(a.getOrDefault("action", "commit"));
                return obj();
            case "stop":
                return stop(a.get("name"));
            case "stats":
                return stats();
            // -- bare transactional producers: each answers ok or the exception's class ---------
            case "pinit":
                return pinit(a.get("name"), a.get("tid"), num(a, "timeoutMs", 60000));
            case "pbegin":
                return attempt(() -> producer(a.get("name")).beginTransaction());
            case "psend":
                return attempt(() -> send(producer(a.get("name")), a.get("topic"), num(a, "first", 0), num(a, "n", 1),
                        num(a, "partitions", 6)));
            case "pcommit":
                return attempt(() -> producer(a.get("name")).commitTransaction());
            case "pabort":
                return attempt(() -> producer(a.get("name")).abortTransaction());
            case "pclose":
                producers.remove(a.get("name")).close(Duration.ofSeconds(5));
                return obj();
            case "exit":
                for (String name : new ArrayList<>(workers.keySet())) {
                    if (workers.get(name).thread.isAlive()) {
                        stop(name);
                    }
                }
                for (KafkaProducer<byte[], byte[]> p : producers.values()) {
                    p.close(Duration.ofSeconds(5));
                }
                if (plain != null) {
                    plain.close(Duration.ofSeconds(5));
                }
                return obj();
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // -- the exactly-once workers -----------------------------------------------------------

    private final class Worker implements Runnable, ConsumerRebalanceListener {
        final String name;
        final String tid;
        final String in;
        final String out;
        final KafkaConsumer<byte[], byte[]> consumer;
        final KafkaProducer<byte[], byte[]> producer;
        final Thread thread;
        final Set<Integer> owned = Collections.synchronizedSet(new TreeSet<>());
        volatile boolean running = true;
        volatile boolean holdNext;
        volatile CountDownLatch held;
        volatile String releaseAction = "commit";
        volatile int commits;
        volatile int aborts;
        volatile int records;

        Worker(String name, String tid, String in, String out, Properties cprops, Properties pprops) {
            this.name = name;
            this.tid = tid;
            this.in = in;
            this.out = out;
            this.consumer = new KafkaConsumer<>(cprops, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.producer = new KafkaProducer<>(pprops, new ByteArraySerializer(), new ByteArraySerializer());
            this.thread = new Thread(this, "worker-" + name);
            this.thread.setDaemon(true);
        }

        @Override
        public void run() {
            String fatal = null;
            try {
                producer.initTransactions();
                emit(obj("type", "initialized", "name", name, "tid", tid));
                consumer.subscribe(List.of(in), this);
                while (running) {
                    ConsumerRecords<byte[], byte[]> batch;
                    try {
                        batch = consumer.poll(Duration.ofMillis(100));
                    } catch (WakeupException e) {
                        continue;
                    }
                    if (!batch.isEmpty()) {
                        fatal = process(batch);
                        if (fatal != null) {
                            break;
                        }
                    }
                }
            } catch (Throwable t) {
                fatal = t.getClass().getSimpleName();
                emit(obj("type", "worker_failed", "name", name, "error", describe(t)));
                t.printStackTrace();
            } finally {
                close(fatal);
            }
        }

        /** One transaction; returns the fatal exception's class name when the worker must stop. */
        private String process(ConsumerRecords<byte[], byte[]> batch) {
            try {
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                List<String> keys = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    String value = new String(r.value(), StandardCharsets.UTF_8).replace("value-", "done-");
                    producer.send(new ProducerRecord<>(out, r.partition(), r.key(), utf8(value)));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    keys.add(new String(r.key(), StandardCharsets.UTF_8));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (holdNext) {
                    holdNext = false;
                    producer.flush(); // the records are in the log, in the open transaction
                    held = new CountDownLatch(1);
                    emit(obj("type", "holding", "name", name, "tid", tid, "keys", keys, "partitions", partitions(next.keySet())));
                    boolean released = held.await(60, TimeUnit.SECONDS);
                    held = null;
                    if (!released) {
                        throw new IllegalStateException("never released");
                    }
                    emit(obj("type", "released", "name", name, "action", releaseAction));
                    if (releaseAction.equals("abort")) {
                        throw new KafkaException("aborted by the test");
                    }
                }
                producer.commitTransaction();
                commits++;
                records += batch.count();
                return null;
            } catch (ProducerFencedException | FencedInstanceIdException | OutOfOrderSequenceException
                     | AuthorizationException | UnsupportedVersionException e) {
                // can't recover: close the producer (and this worker), as the KafkaProducer javadoc says
                emit(obj("type", "fatal", "name", name, "tid", tid, "error", e.getClass().getSimpleName(),
                        "message", String.valueOf(e.getMessage())));
                return e.getClass().getSimpleName();
            } catch (KafkaException e) {
                emit(obj("type", "aborted", "name", name, "tid", tid, "error", e.getClass().getSimpleName(),
                        "message", String.valueOf(e.getMessage())));
                try {
                    producer.abortTransaction();
                    aborts++;
                } catch (KafkaException e2) {
                    emit(obj("type", "fatal", "name", name, "tid", tid, "error", e2.getClass().getSimpleName(),
                            "message", String.valueOf(e2.getMessage()), "during", "abort"));
                    return e2.getClass().getSimpleName();
                }
                rewind();
                return null;
            } catch (InterruptedException e) {
                return "InterruptedException";
            }
        }

        /** Back to the committed offsets (or the beginning) of every owned partition. */
        private void rewind() {
            Set<TopicPartition> assignment = consumer.assignment();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assignment, API_TIMEOUT);
            for (TopicPartition tp : assignment) {
                OffsetAndMetadata om = committed.get(tp);
                if (om != null) {
                    consumer.seek(tp, om.offset());
                } else {
                    consumer.seekToBeginning(List.of(tp));
                }
            }
            emit(obj("type", "rewound", "name", name, "partitions", partitions(assignment)));
        }

        void release(String action) {
            waitFor(name + " holding", 20000, () -> held != null);
            releaseAction = action;
            CountDownLatch latch = held;
            if (latch != null) {
                latch.countDown();
            }
        }

        private void close(String fatal) {
            try {
                producer.close(Duration.ofSeconds(10));
            } catch (Throwable t) {
                emit(obj("type", "close_failed", "name", name, "error", describe(t)));
            }
            try {
                consumer.close(Duration.ofSeconds(10));
            } catch (Throwable t) {
                emit(obj("type", "close_failed", "name", name, "error", describe(t)));
            }
            emit(obj("type", "closed", "name", name, "fatal", fatal));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            owned.removeAll(partitions(tps));
            emit(obj("type", "revoked", "name", name, "partitions", partitions(tps)));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            owned.addAll(partitions(tps));
            emit(obj("type", "assigned", "name", name, "partitions", partitions(tps),
                    "generation", consumer.groupMetadata().generationId()));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> tps) {
            owned.removeAll(partitions(tps));
            emit(obj("type", "lost", "name", name, "partitions", partitions(tps)));
        }
    }

    private Map<String, Object> start(Map<String, String> a) {
        String name = a.get("name");
        if (workers.containsKey(name) && workers.get(name).thread.isAlive()) {
            throw new IllegalStateException("worker " + name + " is running");
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "txn-java-" + name);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.getOrDefault("session", "6000"));
        c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        c.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, a.getOrDefault("maxPoll", "30000"));
        c.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        c.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        c.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        c.put(ConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, a.getOrDefault("maxPollRecords", "20"));
        Properties p = producerProps("txn-java-" + name + "-producer");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.get("tid"));
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, a.getOrDefault("txnTimeout", "60000"));
        Worker w = new Worker(name, a.get("tid"), a.getOrDefault("in", "in"), a.getOrDefault("out", "out"), c, p);
        workers.put(name, w);
        w.thread.start();
        return obj();
    }

    private Worker worker(String name) {
        Worker w = workers.get(name);
        if (w == null) {
            throw new IllegalArgumentException("no worker " + name);
        }
        return w;
    }

    private Map<String, Object> stop(String name) throws InterruptedException {
        Worker w = worker(name);
        w.running = false;
        CountDownLatch latch = w.held;
        if (latch != null) {
            latch.countDown(); // a held transaction is committed on the way out
        }
        w.consumer.wakeup();
        w.thread.join(30000);
        if (w.thread.isAlive()) {
            throw new IllegalStateException("worker " + name + " did not stop");
        }
        return obj("commits", w.commits, "aborts", w.aborts, "records", w.records);
    }

    private Map<String, Object> stats() {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Worker w : workers.values()) {
            synchronized (w.owned) {
                out.put(w.name, obj("commits", w.commits, "aborts", w.aborts, "records", w.records,
                        "alive", w.thread.isAlive(), "owned", new ArrayList<>(w.owned)));
            }
        }
        return obj("workers", out);
    }

    // -- bare transactional producers -------------------------------------------------------

    private interface Step {
        void run() throws Exception;
    }

    /** Runs one producer call: {"ok":true}, or the exception it threw (unwrapping ExecutionException). */
    private static Map<String, Object> attempt(Step step) {
        try {
            step.run();
            return obj("ok", true);
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            return obj("ok", false, "exception", t.getClass().getSimpleName(), "message", String.valueOf(t.getMessage()));
        }
    }

    private Map<String, Object> pinit(String name, String tid, int timeoutMs) {
        Properties p = producerProps("txn-java-" + name);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, String.valueOf(timeoutMs));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        producers.put(name, producer);
        return attempt(producer::initTransactions);
    }

    private KafkaProducer<byte[], byte[]> producer(String name) {
        KafkaProducer<byte[], byte[]> p = producers.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no producer " + name);
        }
        return p;
    }

    /** Sends key-I/value-I to partition I % partitions and waits for every acknowledgement. */
    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, int from, int n, int partitions)
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

    private Properties producerProps(String clientId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "2");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        p.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
        return p;
    }

    // -- input ------------------------------------------------------------------------------

    private void produceRange(String topic, int from, int n, int partitions) throws Exception {
        if (plain == null) {
            plain = new KafkaProducer<>(producerProps("txn-java-input"), new ByteArraySerializer(), new ByteArraySerializer());
        }
        send(plain, topic, from, n, partitions);
    }

    private Map<String, Object> produceStream(String topic, int from, int n, int partitions, int chunk, int intervalMs) {
        produced = 0;
        streamError = null;
        stream = new Thread(() -> {
            try {
                for (int i = from; i < from + n; i += chunk) {
                    int size = Math.min(chunk, from + n - i);
                    produceRange(topic, i, size, partitions);
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

    // -- helpers (as in GroupScenarios) -----------------------------------------------------

    private static void waitFor(String what, int timeoutMs, java.util.function.BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static String kafkaVersion() throws java.io.IOException {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            props.load(in);
        }
        return props.getProperty("version", "unknown");
    }

    private static int num(Map<String, String> a, String key, int dflt) {
        return a.containsKey(key) ? Integer.parseInt(a.get(key)) : dflt;
    }

    private static List<Integer> partitions(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        Collections.sort(out);
        return out;
    }

    private static String describe(Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        String trace = sw.toString();
        return trace.length() > 3000 ? trace.substring(0, 3000) : trace;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static synchronized void emit(Map<String, Object> m) {
        Map<String, Object> withTime = obj("t", (System.nanoTime() - T0) / 1_000_000);
        withTime.putAll(m);
        StringBuilder sb = new StringBuilder();
        json(sb, withTime);
        OUT.println(sb);
        OUT.flush();
    }

    private static void json(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map) {
            sb.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                sb.append(sep);
                sep = ",";
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection) {
            sb.append('[');
            String sep = "";
            for (Object o : (Collection<?>) v) {
                sb.append(sep);
                sep = ",";
                json(sb, o);
            }
            sb.append(']');
        } else {
            quote(sb, String.valueOf(v));
        }
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }
}
