package fakebroker;

import static fakebroker.Lines.emit;
import static fakebroker.Lines.obj;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams word count on a streams group (KIP-1071, {@code group.protocol=streams}; issue 39),
 * for tests/clients/test_streams_groups_java.py and test_streams_groups_faults_java.py: several
 * {@link KafkaStreams} instances in this JVM, started, inspected and closed one command at a time
 * over the line protocol of {@link Lines#serve}.
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.StreamsGroupScenarios BOOTSTRAP
 *
 *   start name= app= input= output= dir= [port=] [guarantee=] [on_error=]
 *                                                 a new instance: application.id=app, state.dir=dir,
 *                                                 client.id=app-name, application.server=localhost:port
 *                                                 (none without port), processing.guarantee=guarantee
 *                                                 (default at_least_once; exactly_once_v2), and an
 *                                                 uncaught exception handler answering on_error
 *                                                 (shutdown_client, the default, or replace_thread);
 *                                                 the topology is input -> split into words ->
 *                                                 groupBy(word) (a repartition topic) -> count (store
 *                                                 "counts", its changelog) -> output (word, count as
 *                                                 a long)
 *   tasks                                         each instance's state and the active and standby
 *                                                 tasks of its threads (metadataForLocalThreads),
 *                                                 and, when RUNNING, its view of every instance's
 *                                                 partitions (metadataForAllStreamsClients: the
 *                                                 heartbeat's PartitionsByUserEndpoint)
 *   describe app=                                 the group as Admin.describeStreamsGroups tells it
 *   close name=                                   closes the instance, leaving the group
 *   exit                                          closes the instances left
 * </pre>
 *
 * Each instance runs one stream thread, with num.standby.replicas=1, no record cache (every count
 * update reaches the output) and a 100 ms commit interval. State changes and uncaught exceptions
 * are printed as {"type":"state",...} and {"type":"uncaught",...} lines (an uncaught one with its
 * exception's class, its cause's class and its message).
 */
public final class StreamsGroupScenarios {
    private static final String STORE = "counts";
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final String bootstrap;
    private final Map<String, KafkaStreams> instances = new LinkedHashMap<>();

    private StreamsGroupScenarios(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        StreamsGroupScenarios scenarios = new StreamsGroupScenarios(args[0]);
        Lines.serve(scenarios::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        switch (cmd) {
            case "start":
                return start(a);
            case "tasks":
                return tasks();
            case "describe":
                return describe(a.get("app"));
            case "close":
                return close(a.get("name"));
            case "exit":
                for (String name : new ArrayList<>(instances.keySet())) {
                    close(name);
                }
                return obj();
            default:
                return null;
        }
    }

    static Topology wordCount(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(input);
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private Map<String, Object> start(Map<String, String> a) {
        String name = a.get("name");
        if (instances.containsKey(name)) {
            throw new IllegalArgumentException("instance " + name + " is already started");
        }
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.CLIENT_ID_CONFIG, a.get("app") + "-" + name);
        props.put(StreamsConfig.STATE_DIR_CONFIG, a.get("dir"));
        if (a.containsKey("port")) {
            props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "localhost:" + a.get("port"));
        }
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a.getOrDefault("guarantee", StreamsConfig.AT_LEAST_ONCE));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        KafkaStreams streams = new KafkaStreams(wordCount(a.get("input"), a.get("output")), props);
        streams.setStateListener((to, from) ->
                emit(obj("type", "state", "instance", name, "from", from.name(), "to", to.name())));
        StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse response =
                StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.valueOf(
                        a.getOrDefault("on_error", "shutdown_client").toUpperCase(Locale.ROOT));
        streams.setUncaughtExceptionHandler(e -> {
            emit(obj("type", "uncaught", "instance", name, "exception", e.getClass().getName(),
                    "cause", e.getCause() == null ? null : e.getCause().getClass().getName(),
                    "message", String.valueOf(e.getMessage()), "error", Lines.describe(e)));
            return response;
        });
        instances.put(name, streams);
        streams.start();
        return obj("started", name);
    }

    private Map<String, Object> tasks() {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, KafkaStreams> e : instances.entrySet()) {
            KafkaStreams streams = e.getValue();
            List<String> active = new ArrayList<>();
            List<String> standby = new ArrayList<>();
            List<String> threads = new ArrayList<>();
            for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                threads.add(thread.threadName() + ":" + thread.threadState());
                for (TaskMetadata task : thread.activeTasks()) {
                    active.add(task.taskId().toString());
                }
                for (TaskMetadata task : thread.standbyTasks()) {
                    standby.add(task.taskId().toString());
                }
            }
            Collections.sort(active);
            Collections.sort(standby);
            Map<String, Object> endpoints = new TreeMap<>();
            if (streams.state() == KafkaStreams.State.RUNNING) {
                for (StreamsMetadata m : streams.metadataForAllStreamsClients()) {
                    endpoints.put(m.host() + ":" + m.port(), obj("active", names(m.topicPartitions()),
                            "standby", names(m.standbyTopicPartitions()), "stores", new TreeSet<>(m.stateStoreNames())));
                }
            }
            out.put(e.getKey(), obj("state", streams.state().name(), "threads", threads, "active", active,
                    "standby", standby, "endpoints", endpoints));
        }
        return obj("instances", out);
    }

    private static List<String> names(Set<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.toString());
        }
        Collections.sort(out);
        return out;
    }

    private static List<String> taskNames(List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds ids : tasks) {
            for (int p : ids.partitions()) {
                out.add(ids.subtopologyId() + "_" + p);
            }
        }
        Collections.sort(out);
        return out;
    }

    /** The group as StreamsGroupDescribe (Admin.describeStreamsGroups) tells it. */
    private Map<String, Object> describe(String app) throws Exception {
        try (Admin admin = Lines.admin(bootstrap, app + "-admin")) {
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
            Map<String, Object> subtopologies = new TreeMap<>();
            for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
                Map<String, Object> changelogs = new TreeMap<>();
                s.stateChangelogTopics().forEach((t, info) -> changelogs.put(t, info.partitions()));
                Map<String, Object> repartitions = new TreeMap<>();
                s.repartitionSourceTopics().forEach((t, info) -> repartitions.put(t, info.partitions()));
                subtopologies.put(s.subtopologyId(), obj("sources", s.sourceTopics(), "sinks",
                        s.repartitionSinkTopics(), "changelogs", changelogs, "repartition_sources", repartitions));
            }
            Map<String, Object> members = new TreeMap<>();
            for (StreamsGroupMemberDescription m : d.members()) {
                String endpoint = m.userEndpoint().map(ep -> ep.host() + ":" + ep.port()).orElse(m.memberId());
                members.put(endpoint, obj("epoch", m.memberEpoch(), "process", m.processId(),
                        "active", taskNames(m.assignment().activeTasks()),
                        "standby", taskNames(m.assignment().standbyTasks()),
                        "warmup", taskNames(m.assignment().warmupTasks()),
                        "target_active", taskNames(m.targetAssignment().activeTasks()),
                        "target_standby", taskNames(m.targetAssignment().standbyTasks())));
            }
            return obj("state", d.groupState().toString(), "group_epoch", d.groupEpoch(),
                    "assignment_epoch", d.targetAssignmentEpoch(), "topology_epoch", d.topologyEpoch(),
                    "subtopologies", subtopologies, "members", members);
        }
    }

    private Map<String, Object> close(String name) {
        KafkaStreams streams = instances.remove(name);
        if (streams == null) {
            throw new IllegalArgumentException("no instance " + name);
        }
        long started = System.nanoTime();
        boolean closed = streams.close(CloseOptions.groupMembershipOperation(
                CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(CLOSE_TIMEOUT));
        return obj("closed", closed, "state", streams.state().name(), "ms", (System.nanoTime() - started) / 1_000_000);
    }
}
