package example.orders;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A test helper: runs {@code fakebroker serve} beside the tests and scripts it over its HTTP
 * control endpoint with {@link HttpClient}.
 *
 * <pre>
 * try (FakeBroker fb = FakeBroker.start(3)) {
 *     fb.addFault(Map.of("api", "Heartbeat", "group", "orders", "error", "REBALANCE_IN_PROGRESS", "times", 3));
 *     fb.waitFor("group_state", Map.of("group", "orders", "state", "Stable", "members", 2), 15);
 * }
 * </pre>
 *
 * The command comes from the system property {@code fakebroker.cmd} or the environment variable
 * {@code FAKEBROKER} (split on spaces, e.g. "python3 -m fakebroker"), else {@code fakebroker}.
 */
public final class FakeBroker implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(20);
    private static final int KEEP_LINES = 300;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A non-2xx answer: {@code status} and the server's {@code error} message. */
    public static final class ControlError extends RuntimeException {
        public final int status;

        ControlError(String call, int status, String message) {
            super(call + " -> " + status + ": " + message);
            this.status = status;
        }
    }

    private final Process process;
    private final String bootstrap;
    private final URI url;
    private final String token;
    private final Deque<String> lines;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private FakeBroker(Process process, String bootstrap, URI url, String token, Deque<String> lines) {
        this.process = process;
        this.bootstrap = bootstrap;
        this.url = url;
        this.token = token;
        this.lines = lines;
    }

    /** Starts {@code fakebroker serve} with {@code brokers} brokers on free ports; waits for its first two lines. */
    public static FakeBroker start(int brokers, String... extraArgs) throws IOException, InterruptedException {
        String cmd = System.getProperty("fakebroker.cmd", System.getenv().getOrDefault("FAKEBROKER", "fakebroker"));
        List<String> argv = new ArrayList<>(Arrays.asList(cmd.trim().split("\\s+")));
        argv.addAll(List.of("serve", "--brokers", String.valueOf(brokers), "--port", "0", "--control-port", "0", "--no-color"));
        argv.addAll(List.of(extraArgs));
        Process process = new ProcessBuilder(argv).redirectErrorStream(true).start();
        Deque<String> lines = new ArrayDeque<>();
        CompletableFuture<String[]> ready = new CompletableFuture<>();
        // one thread reads everything the server prints (its event log never stops), keeping the
        // last lines for a failing test's message; it picks out the two lines we need
        Thread reader = new Thread(() -> {
            String bootstrap = null;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    synchronized (lines) {
                        lines.addLast(line);
                        if (lines.size() > KEEP_LINES) {
                            lines.removeFirst();
                        }
                    }
                    if (bootstrap == null && line.startsWith("bootstrap: ")) {
                        bootstrap = line.substring("bootstrap: ".length()).trim();
                    } else if (bootstrap != null && !ready.isDone() && line.startsWith("control: ")) {
                        String[] parts = line.substring("control: ".length()).trim().split(" token=");
                        ready.complete(new String[] {bootstrap, parts[0], parts[1]});
                    }
                }
            } catch (IOException | RuntimeException e) {
                ready.completeExceptionally(e);
            }
            ready.completeExceptionally(new IOException("fakebroker serve exited before it was ready"));
        }, "fakebroker-serve-output");
        reader.setDaemon(true);
        reader.start();
        try {
            String[] got = ready.get(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            return new FakeBroker(process, got[0], URI.create(got[1]), got[2], lines);
        } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
            process.destroyForcibly();
            throw new IOException("fakebroker serve (" + String.join(" ", argv) + ") did not start: " + e
                + "\n" + String.join("\n", lines), e);
        }
    }

    /** SIGTERM (the server stops cleanly); forcibly after 10 s. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
    }

    public String bootstrap() {
        return bootstrap;
    }

    /** The server's last output lines (its event log), for a failing test's message. */
    public String tail(int n) {
        synchronized (lines) {
            List<String> all = new ArrayList<>(lines);
            return String.join("\n", all.subList(Math.max(0, all.size() - n), all.size()));
        }
    }

    // -- the control endpoint ---------------------------------------------------------------------
    public JsonNode call(String method, String path, Object body, Duration timeout) {
        try {
            HttpRequest.Builder req = HttpRequest.newBuilder(url.resolve(path)).timeout(timeout)
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json");
            req.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
            HttpResponse<String> res = http.send(req.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode payload = JSON.readTree(res.body());
            if (res.statusCode() / 100 != 2) {
                throw new ControlError(method + " " + path, res.statusCode(), payload.path("error").asText());
            }
            return payload;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(method + " " + path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + method + " " + path, e);
        }
    }

    public JsonNode call(String method, String path, Object body) {
        return call(method, path, body, CALL_TIMEOUT);
    }

    public JsonNode createTopic(String name, int partitions, int replicationFactor) {
        return call("POST", "/topics", Map.of("name", name, "partitions", partitions, "replication_factor", replicationFactor));
    }

    public JsonNode topic(String name) {
        return call("GET", "/topics/" + enc(name), null);
    }

    /** A fault rule: the body is {@code cluster.faults.add}'s keyword arguments (api, group, client_id, error, action, times...). */
    public JsonNode addFault(Map<String, Object> rule) {
        return call("POST", "/faults", rule);
    }

    public JsonNode fault(long id) {
        return call("GET", "/faults/" + id, null);
    }

    /** Stops a broker as if its process died; returns once its port is closed. */
    public JsonNode stopBroker(int id) {
        return call("POST", "/brokers/" + id + "/stop", null);
    }

    /** Starts it again on the same port; returns once it listens. */
    public JsonNode startBroker(int id) {
        return call("POST", "/brokers/" + id + "/start", null);
    }

    public JsonNode brokers() {
        return call("GET", "/brokers", null).path("brokers");
    }

    /** Gives every partition back to its preferred live replica; returns how many moved. */
    public int electPreferredLeaders() {
        return call("POST", "/leaders/preferred", null).path("moved").asInt();
    }

    /** The group as its coordinator sees it (state, generation, coordinator, members with assignments), or null. */
    public JsonNode group(String id) {
        try {
            return call("GET", "/groups/" + enc(id), null);
        } catch (ControlError e) {
            if (e.status == 404) {
                return null;
            }
            throw e;
        }
    }

    /** Committed offsets as {"topic/partition": offset}. */
    public Map<String, Long> committed(String groupId) {
        Map<String, Long> out = new TreeMap<>();
        try {
            for (JsonNode o : call("GET", "/groups/" + enc(groupId) + "/offsets", null).path("offsets")) {
                out.put(o.path("topic").asText() + "/" + o.path("partition").asInt(), o.path("offset").asLong());
            }
        } catch (ControlError e) {
            if (e.status != 404) {
                throw e;
            }
        }
        return out;
    }

    /** Events after {@code since} (0: all), filtered by kind (comma-separated), group and client id (null: any). */
    public JsonNode events(String kinds, String group, String clientId) {
        StringBuilder q = new StringBuilder("/events?since=0");
        if (kinds != null) q.append("&kind=").append(enc(kinds));
        if (group != null) q.append("&group=").append(enc(group));
        if (clientId != null) q.append("&client_id=").append(enc(clientId));
        return call("GET", q.toString(), null).path("events");
    }

    /**
     * Waits on the server for a condition (group_state, generation_above, event, member_expired,
     * committed_offset) with its parameters; returns what matched. A timeout is an AssertionError
     * naming what the server saw last.
     */
    public JsonNode waitFor(String condition, Map<String, Object> params, double timeoutSeconds) {
        Map<String, Object> body = new TreeMap<>(params);
        body.put("condition", condition);
        body.put("timeout", timeoutSeconds);
        try {
            return call("POST", "/wait", body, Duration.ofMillis((long) (timeoutSeconds * 1000) + 10_000)).path("result");
        } catch (ControlError e) {
            if (e.status == 408) {
                throw new AssertionError(e.getMessage(), e);
            }
            throw e;
        }
    }

    /** Polls {@code check} (a count in the test, a group view) until it holds. */
    public static void until(String what, Duration timeout, BooleanSupplier check) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!check.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
