package fakebroker;

import static fakebroker.Lines.obj;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Java Admin client's config APIs for tests/clients/test_java_configs.py: describeConfigs
 * (with synonyms and documentation), incrementalAlterConfigs (one operation per command) and
 * createTopics with configs (and the configs its answer carries).
 *
 * <pre>
 *   java -cp fakebroker-java-client.jar fakebroker.ConfigScenarios BOOTSTRAP
 * </pre>
 *
 * Each stdin line is {@code ID COMMAND key=value...}; each gets one JSON reply line. A failed
 * Admin call answers {@code {"exception": SimpleClassName}}.
 */
public final class ConfigScenarios {
    private final Admin admin;

    private ConfigScenarios(String bootstrap) {
        admin = Lines.admin(bootstrap, "config-scenarios");
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BOOTSTRAP");
            System.exit(2);
        }
        ConfigScenarios driver = new ConfigScenarios(args[0]);
        Lines.serve(driver::run);
    }

    private Map<String, Object> run(String cmd, Map<String, String> a) throws Exception {
        try {
            switch (cmd) {
                case "describe":
                    return describe(resource(a), a.getOrDefault("keys", ""));
                case "alter":
                    return alter(resource(a), a);
                case "create":
                    return create(a.get("topic"), a.getOrDefault("configs", ""),
                            Boolean.parseBoolean(a.getOrDefault("validateOnly", "false")));
                case "exit":
                    admin.close();
                    return obj();
                default:
                    return null;
            }
        } catch (ExecutionException e) {
            return obj("exception", e.getCause().getClass().getSimpleName(), "message", e.getCause().getMessage());
        }
    }

    private static ConfigResource resource(Map<String, String> a) {
        return new ConfigResource(ConfigResource.Type.valueOf(a.get("type")), a.getOrDefault("name", ""));
    }

    private Map<String, Object> describe(ConfigResource r, String keys) throws Exception {
        DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
        Config config = admin.describeConfigs(Collections.singleton(r), options).all().get(20, TimeUnit.SECONDS).get(r);
        Map<String, Object> out = new TreeMap<>();
        List<String> wanted = keys.isEmpty() ? List.of() : List.of(keys.split(","));
        for (ConfigEntry e : config.entries()) {
            if (!wanted.isEmpty() && !wanted.contains(e.name())) {
                continue;
            }
            List<Object> synonyms = new ArrayList<>();
            for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                synonyms.add(List.of(s.name(), String.valueOf(s.value()), s.source().name()));
            }
            out.put(e.name(), obj("value", e.value(), "source", e.source().name(), "readOnly", e.isReadOnly(),
                    "sensitive", e.isSensitive(), "type", e.type().name(), "synonyms", synonyms,
                    "documented", e.documentation() != null && !e.documentation().isEmpty()));
        }
        return obj("count", config.entries().size(), "configs", out);
    }

    private Map<String, Object> alter(ConfigResource r, Map<String, String> a) throws Exception {
        AlterConfigOp.OpType op = AlterConfigOp.OpType.valueOf(a.get("op"));
        ConfigEntry entry = new ConfigEntry(a.get("key"), a.getOrDefault("value", ""));
        AlterConfigsOptions options = new AlterConfigsOptions()
                .validateOnly(Boolean.parseBoolean(a.getOrDefault("validateOnly", "false")));
        admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(entry, op))), options)
                .all().get(20, TimeUnit.SECONDS);
        return obj("ok", true);
    }

    private Map<String, Object> create(String topic, String configs, boolean validateOnly) throws Exception {
        Map<String, String> given = new TreeMap<>();
        for (String kv : configs.isEmpty() ? new String[0] : configs.split(";")) {
            int eq = kv.indexOf(':');
            given.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        NewTopic t = new NewTopic(topic, Optional.of(1), Optional.empty()).configs(given);
        CreateTopicsResult result = admin.createTopics(List.of(t),
                new org.apache.kafka.clients.admin.CreateTopicsOptions().validateOnly(validateOnly));
        result.all().get(20, TimeUnit.SECONDS);
        Config config = result.config(topic).get(20, TimeUnit.SECONDS);
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry e : config.entries()) {
            out.put(e.name(), obj("value", e.value(), "source", e.source().name()));
        }
        return obj("count", config.entries().size(), "configs", out);
    }
}
