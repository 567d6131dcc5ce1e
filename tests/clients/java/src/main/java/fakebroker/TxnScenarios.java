package fakebroker;

import static fakebroker.Lines.describe;
import static fakebroker.Lines.emit;
import static fakebroker.Lines.list;
import static fakebroker.Lines.num;
import static fakebroker.Lines.obj;
import static fakebroker.Lines.partitions;
import static fakebroker.Lines.utf8;
import static fakebroker.Lines.waitFor;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FenceProducersResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
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
 * to its committed offsets (note "aborted"). A worker's consumer uses the classic group protocol, or
 * KIP-848's with {@code protocol=consumer}. The Admin client's transaction APIs (listTransactions,
 * describeTransactions, describeProducers, abortTransaction, fenceProducers) answer commands too.
 * Every wait is bounded.
 */
public final class TxnScenarios {
    private static final Duration API_TIMEOUT = Duration.ofSeconds(15);

    private final String bootstrap;
    private final Map<String, Worker> workers = new ConcurrentHashMap<>();
    private final Map<String, KafkaProducer<byte[], byte[]>> producers = new ConcurrentHashMap<>();
    private KafkaProducer<byte[], byte[]> plain;
    private Admin admin;
    private final Feed feed = new Feed(this::plain);

    private TxnScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        TxnScenarios driver = new TxnScenarios(args[0]);
        Lines.serve(driver::run, driver.feed::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
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
            case "pin": // the worker keeps a copy of its group metadata as it is now
                return worker(a.get("name")).pin();
            case "usePinned": // ... and sends its next transaction's offsets with that copy
                worker(a.get("name")).usePinned = true;
                return obj();
            // -- the Admin client's transaction APIs -------------------------------------------
            case "listTxns":
                return listTransactions(a);
            case "describeTxns":
                return describeTransactions(list(a.get("ids")));
            case "describeProducers":
                return describeProducers(a.get("topic"), list(a.get("partitions")));
            case "abortTxn":
                return attempt(() -> admin().abortTransaction(new AbortTransactionSpec(
                        new TopicPartition(a.get("topic"), num(a, "partition", 0)), Long.parseLong(a.get("pid")),
                        Short.parseShort(a.get("epoch")), num(a, "coordinatorEpoch", 0))).all().get(20, TimeUnit.SECONDS));
            case "fenceProducers":
                return fenceProducers(list(a.get("ids")));
            case "endOffsets":
                return endOffsets(a.get("topic"), list(a.get("partitions")));
            // -- bare transactional producers: each answers ok or the exception's class ---------
            case "pinit":
                return pinit(a.get("name"), a.get("tid"), num(a, "timeoutMs", 60000));
            case "pbegin":
                return attempt(() -> producer(a.get("name")).beginTransaction());
            case "psend":
                return attempt(() -> Feed.send(producer(a.get("name")), a.get("topic"), num(a, "first", 0), num(a, "n", 1),
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
                if (admin != null) {
                    admin.close(Duration.ofSeconds(5));
                }
                return obj();
            default:
                return null; // the feed's, or unknown
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
        volatile boolean pinNext;
        volatile ConsumerGroupMetadata pinned;
        volatile boolean usePinned;
        /** The group metadata (member id, generation or member epoch) of each committed transaction. */
        final Set<List<Object>> committedWith = Collections.synchronizedSet(new HashSet<>());

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
                    if (pinNext) {
                        pinned = consumer.groupMetadata();
                        pinNext = false;
                    }
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
                ConsumerGroupMetadata metadata = consumer.groupMetadata();
                if (usePinned) {
                    usePinned = false;
                    emit(obj("type", "pinned_used", "name", name, "memberId", pinned.memberId(),
                            "generation", pinned.generationId(), "current", metadata.generationId()));
                    metadata = pinned;
                }
                producer.sendOffsetsToTransaction(next, metadata);
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
                committedWith.add(List.of(metadata.memberId(), metadata.generationId()));
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

        /** Asks the worker's thread for a copy of its group metadata; waits for it. */
        Map<String, Object> pin() {
            pinned = null;
            pinNext = true;
            waitFor(name + " pinning its group metadata", 20000, () -> pinned != null);
            return obj("memberId", pinned.memberId(), "generation", pinned.generationId());
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
        String protocol = a.getOrDefault("protocol", "classic");
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) { // with KIP-848's protocol the broker owns these
            c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.getOrDefault("session", "6000"));
            c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
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
                List<Object> committedWith;
                synchronized (w.committedWith) {
                    committedWith = new ArrayList<>(w.committedWith);
                }
                out.put(w.name, obj("commits", w.commits, "aborts", w.aborts, "records", w.records,
                        "alive", w.thread.isAlive(), "owned", new ArrayList<>(w.owned), "committedWith", committedWith));
            }
        }
        return obj("workers", out);
    }

    // -- bare transactional producers -------------------------------------------------------

    /** Runs one producer call: {"ok":true}, or the exception it threw (unwrapping ExecutionException). */
    private static Map<String, Object> attempt(Lines.Step step) {
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

    /** The plain (idempotent, not transactional) producer of input records. */
    private synchronized KafkaProducer<byte[], byte[]> plain() {
        if (plain == null) {
            plain = new KafkaProducer<>(producerProps("txn-java-input"), new ByteArraySerializer(), new ByteArraySerializer());
        }
        return plain;
    }

    // -- the Admin client's transaction APIs ------------------------------------------------

    private synchronized Admin admin() {
        if (admin == null) {
            admin = Lines.admin(bootstrap, "txn-java-admin"); // fenceProducers' transaction timeout: its request.timeout.ms
        }
        return admin;
    }

    /** listTransactions with the filters given (states, pids: comma-separated; durationMs; pattern). */
    private Map<String, Object> listTransactions(Map<String, String> a) throws Exception {
        ListTransactionsOptions options = new ListTransactionsOptions();
        if (a.containsKey("states")) {
            List<TransactionState> states = new ArrayList<>();
            for (String s : list(a.get("states"))) {
                states.add(TransactionState.parse(s));
            }
            options.filterStates(states);
        }
        if (a.containsKey("pids")) {
            List<Long> pids = new ArrayList<>();
            for (String s : list(a.get("pids"))) {
                pids.add(Long.parseLong(s));
            }
            options.filterProducerIds(pids);
        }
        if (a.containsKey("durationMs")) {
            options.filterOnDuration(Long.parseLong(a.get("durationMs")));
        }
        if (a.containsKey("pattern")) {
            options.filterOnTransactionalIdPattern(a.get("pattern"));
        }
        Map<String, Object> out = new TreeMap<>();
        for (TransactionListing t : admin().listTransactions(options).all().get(20, TimeUnit.SECONDS)) {
            out.put(t.transactionalId(), obj("producerId", t.producerId(), "state", t.state().toString()));
        }
        return obj("transactions", out);
    }

    /** describeTransactions: per id its description, or the exception it failed with. */
    private Map<String, Object> describeTransactions(List<String> ids) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        var result = admin().describeTransactions(ids);
        for (String id : ids) {
            try {
                TransactionDescription d = result.description(id).get(20, TimeUnit.SECONDS);
                List<String> tps = new ArrayList<>();
                for (TopicPartition tp : d.topicPartitions()) {
                    tps.add(tp.topic() + "-" + tp.partition());
                }
                Collections.sort(tps);
                OptionalLong start = d.transactionStartTimeMs();
                out.put(id, obj("state", d.state().toString(), "coordinator", d.coordinatorId(),
                        "producerId", d.producerId(), "producerEpoch", d.producerEpoch(),
                        "timeoutMs", d.transactionTimeoutMs(), "startMs", start.isPresent() ? start.getAsLong() : null,
                        "partitions", tps));
            } catch (ExecutionException e) {
                out.put(id, obj("exception", e.getCause().getClass().getSimpleName()));
            }
        }
        return obj("transactions", out);
    }

    /** describeProducers: per partition its active producers, or the exception it failed with. */
    private Map<String, Object> describeProducers(String topic, List<String> indexes) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (String i : indexes) {
            tps.add(new TopicPartition(topic, Integer.parseInt(i)));
        }
        var result = admin().describeProducers(tps);
        Map<String, Object> out = new TreeMap<>();
        for (TopicPartition tp : tps) {
            try {
                List<Object> producers = new ArrayList<>();
                for (ProducerState ps : result.partitionResult(tp).get(20, TimeUnit.SECONDS).activeProducers()) {
                    OptionalInt coordinatorEpoch = ps.coordinatorEpoch();
                    OptionalLong txnStart = ps.currentTransactionStartOffset();
                    producers.add(obj("producerId", ps.producerId(), "producerEpoch", ps.producerEpoch(),
                            "lastSequence", ps.lastSequence(), "lastTimestamp", ps.lastTimestamp(),
                            "coordinatorEpoch", coordinatorEpoch.isPresent() ? coordinatorEpoch.getAsInt() : null,
                            "txnStartOffset", txnStart.isPresent() ? txnStart.getAsLong() : null));
                }
                out.put(String.valueOf(tp.partition()), producers);
            } catch (ExecutionException e) {
                out.put(String.valueOf(tp.partition()), obj("exception", e.getCause().getClass().getSimpleName()));
            }
        }
        return obj("partitions", out);
    }

    /** fenceProducers: per id the producer id and epoch the fencing left, or the exception. */
    private Map<String, Object> fenceProducers(List<String> ids) throws Exception {
        FenceProducersResult result = admin().fenceProducers(ids);
        Map<String, Object> out = new TreeMap<>();
        for (String id : ids) {
            try {
                out.put(id, obj("producerId", result.producerId(id).get(20, TimeUnit.SECONDS),
                        "epoch", result.epochId(id).get(20, TimeUnit.SECONDS)));
            } catch (ExecutionException e) {
                out.put(id, obj("exception", e.getCause().getClass().getSimpleName()));
            }
        }
        return obj("fenced", out);
    }

    /** listOffsets latest, read_uncommitted (the high watermark) and read_committed (the LSO). */
    private Map<String, Object> endOffsets(String topic, List<String> indexes) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (String i : indexes) {
            specs.put(new TopicPartition(topic, Integer.parseInt(i)), OffsetSpec.latest());
        }
        Map<String, Object> out = new TreeMap<>();
        for (IsolationLevel level : IsolationLevel.values()) {
            Map<String, Object> ends = new TreeMap<>();
            var got = admin().listOffsets(specs, new ListOffsetsOptions(level)).all().get(20, TimeUnit.SECONDS);
            for (var e : got.entrySet()) {
                ends.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
            }
            out.put(level.toString(), ends);
        }
        return out;
    }
}
