// fbclient drives the franz-go Kafka client (kgo and kadm) against a fakebroker cluster for
// tests/clients/test_franz_go.py. It prints one JSON object per line on stdout; the client's
// own log goes to stderr (level from FAKEBROKER_GO_LOG: debug, info, warn (default), error, none).
//
//	fbclient BOOTSTRAP produce-consume TOPIC N PARTITIONS
//	fbclient BOOTSTRAP compression PREFIX N PARTITIONS CODEC...
//	fbclient BOOTSTRAP driver
//
// The one-shot scenarios produce N records key-i/value-i to partition i % PARTITIONS (manual
// partitioner, idempotent, acks=all), list the start and end offsets, then read every partition
// from the start without a group. The driver takes one JSON command per stdin line
// ({"id": 1, "cmd": "start", ...}) and answers each with {"type": "reply", "id": 1, ...};
// other lines (assigned, revoked, ...) are notes. Every run ends with {"type": "end"}.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"fakebroker/tests/clients/go/lines"
)

const clientID = "fakebroker-franz-go"

var (
	seeds []string
	emit  = lines.Emit
)

type obj = lines.Obj

func fail(format string, args ...any) {
	emit("error", obj{"message": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

// errName is Kafka's name for a broker error (TOPIC_ALREADY_EXISTS, ...), else the error's text.
func errName(err error) any {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func baseOpts(name string) []kgo.Opt {
	return lines.ClientOpts(seeds, clientID, name)
}

func newClient(name string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(baseOpts(name), opts...)...)
	if err != nil {
		fail("new client %s: %v", name, err)
	}
	return cl
}

// envOpts: the option made from the environment variable's number, if it is set (small batches
// or fetch budgets for one run).
func envOpts[O kgo.Opt](name string, opt func(int32) O) []kgo.Opt {
	if v := os.Getenv(name); v != "" {
		return []kgo.Opt{opt(int32(atoi(v)))}
	}
	return nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %q", s)
	}
	return n
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: fbclient BOOTSTRAP produce-consume|compression|driver ARGS...")
		os.Exit(2)
	}
	seeds = strings.Split(os.Args[1], ",")
	args := os.Args[3:]
	emit("version", lines.Versions())
	// A watchdog: the test kills us too, but never leave a process behind.
	time.AfterFunc(110*time.Second, func() { fail("watchdog: still running after 110 s") })
	switch os.Args[2] {
	case "produce-consume":
		if len(args) != 3 {
			fail("produce-consume TOPIC N PARTITIONS")
		}
		produceConsume(args[0], atoi(args[1]), atoi(args[2]), nil)
	case "compression":
		if len(args) < 4 {
			fail("compression PREFIX N PARTITIONS CODEC...")
		}
		for _, name := range args[3:] {
			codec, ok := map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
				"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}[name]
			if !ok {
				fail("unknown codec %q", name)
			}
			// a linger so that the codec runs over multi-record batches
			produceConsume(args[0]+"-"+name, atoi(args[1]), atoi(args[2]),
				[]kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(20 * time.Millisecond)})
		}
	case "driver":
		newDriver().run()
	default:
		fail("unknown scenario %q", os.Args[2])
	}
	emit("end", nil)
}

// -- one-shot: produce, list offsets, consume without a group ----------------------------------

func produceConsume(topic string, n, partitions int, producerOpts []kgo.Opt) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	producer := newClient("producer-"+topic, append(append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default, with idempotence (also the default)
	}, producerOpts...), envOpts("FAKEBROKER_GO_BATCH_MAX_BYTES", kgo.ProducerBatchMaxBytes)...)...)
	results := make([]*kgo.Record, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions),
			Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i))}
		i := i
		producer.Produce(ctx, r, func(r *kgo.Record, err error) {
			results[i], errs[i] = r, err
			wg.Done()
		})
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil {
			fail("produce %s record %d: %v", topic, i, errs[i])
		}
		emit("sent", obj{"topic": topic, "i": i, "partition": r.Partition, "offset": r.Offset,
			"producer_id": r.ProducerID, "producer_epoch": r.ProducerEpoch})
	}
	emit("produced", obj{"topic": topic, "count": n})

	adm := kadm.NewClient(producer)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		fail("list start offsets %s: %v", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		fail("list end offsets %s: %v", topic, err)
	}
	for p := int32(0); p < int32(partitions); p++ {
		s, _ := starts.Lookup(topic, p)
		e, _ := ends.Lookup(topic, p)
		emit("offsets", obj{"topic": topic, "partition": p, "beginning": s.Offset, "end": e.Offset})
	}
	producer.Close()

	assign := map[int32]kgo.Offset{}
	for p := 0; p < partitions; p++ {
		assign[int32(p)] = kgo.NewOffset().AtStart()
	}
	consumerOpts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(500 * time.Millisecond)}
	consumerOpts = append(consumerOpts, envOpts("FAKEBROKER_GO_FETCH_MAX_BYTES", kgo.FetchMaxBytes)...)
	consumerOpts = append(consumerOpts, envOpts("FAKEBROKER_GO_FETCH_MAX_PARTITION_BYTES", kgo.FetchMaxPartitionBytes)...)
	consumer := newClient("consumer-"+topic, consumerOpts...)
	defer consumer.Close()
	count := 0
	poll := func(pctx context.Context) {
		fetches := consumer.PollFetches(pctx)
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fail("fetch %s[%d]: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			count++
			emit("record", obj{"topic": r.Topic, "partition": r.Partition, "offset": r.Offset,
				"key": string(r.Key), "value": string(r.Value), "leader_epoch": r.LeaderEpoch})
		})
	}
	for count < n && ctx.Err() == nil {
		poll(ctx)
	}
	if count < n {
		fail("consumed %d of %d records of %s", count, n, topic)
	}
	// nothing more comes
	quiet, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	poll(quiet)
	stop()
	emit("consumed", obj{"topic": topic, "count": count})
}

// -- the interactive driver: group members and kadm --------------------------------------------

type consumed struct {
	name      string
	partition int32
	offset    int64
	key       string
}

type member struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[string]map[int32]bool
}

func (m *member) assignment(topic string) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.assigned[topic] {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

type driver struct {
	members  map[string]*member
	mu       sync.Mutex
	records  []consumed
	producer *kgo.Client
	admin    *kgo.Client
	adm      *kadm.Client
}

func newDriver() *driver {
	d := &driver{members: map[string]*member{}}
	d.admin = newClient("admin")
	d.adm = kadm.NewClient(d.admin)
	return d
}

type command struct {
	ID                int               `json:"id"`
	Cmd               string            `json:"cmd"`
	Name              string            `json:"name"`
	Names             []string          `json:"names"`
	Group             string            `json:"group"`
	Groups            []string          `json:"groups"`
	Topic             string            `json:"topic"`
	Topics            []string          `json:"topics"`
	First             int               `json:"first"`
	N                 int               `json:"n"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	Total             int               `json:"total"`
	TimeoutMs         int               `json:"timeout_ms"`
}

func (c *command) timeout() time.Duration {
	if c.TimeoutMs > 0 {
		return time.Duration(c.TimeoutMs) * time.Millisecond
	}
	return 20 * time.Second
}

func (d *driver) run() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fail("bad command %q: %v", in.Text(), err)
		}
		reply, err := d.handle(&c)
		if reply == nil {
			reply = obj{}
		}
		reply["id"] = c.ID
		if err != nil {
			reply["error"] = err.Error()
		}
		emit("reply", reply)
		if c.Cmd == "exit" {
			return
		}
	}
	d.shutdown()
}

func (d *driver) shutdown() {
	for name := range d.members {
		d.stop(name)
	}
	if d.producer != nil {
		d.producer.Close()
	}
	d.admin.Close()
}

func (d *driver) handle(c *command) (obj, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	switch c.Cmd {
	case "start":
		return d.start(c)
	case "stop":
		return d.stop(c.Name)
	case "waitAssigned":
		return d.waitAssigned(ctx, c)
	case "produce":
		return d.produce(ctx, c)
	case "waitConsumed":
		return d.waitConsumed(ctx, c.Total)
	case "consumed":
		return obj{"records": d.consumed()}, nil
	case "waitCommitted":
		return d.waitCommitted(ctx, c.Group, c.Topic)
	case "createTopics":
		return d.createTopics(ctx, c)
	case "listTopics":
		return d.listTopics(ctx, c.Topics)
	case "metadata":
		return d.metadata(ctx, c.Topics)
	case "describeGroups":
		return d.describeGroups(ctx, c.Groups)
	case "listGroups":
		return d.listGroups(ctx)
	case "fetchOffsets":
		return d.fetchOffsets(ctx, c.Group)
	case "deleteGroups":
		return d.deleteGroups(ctx, c.Groups)
	case "exit":
		d.shutdown()
		return nil, nil
	}
	return nil, fmt.Errorf("unknown command %q", c.Cmd)
}

// start adds a group member: classic protocol and franz-go's default (cooperative-sticky)
// balancer. It commits synchronously after every poll; BlockRebalanceOnPoll keeps a rebalance
// from running between a poll and its commit, so no record is handed to two members.
func (d *driver) start(c *command) (obj, error) {
	if _, ok := d.members[c.Name]; ok {
		return nil, fmt.Errorf("member %s exists", c.Name)
	}
	m := &member{name: c.Name, done: make(chan struct{}), assigned: map[string]map[int32]bool{}}
	note := func(kind string, cl *kgo.Client, parts map[string][]int32) {
		id, gen := cl.GroupMetadata()
		emit(kind, obj{"name": m.name, "member_id": id, "generation": gen, "partitions": parts})
	}
	cl, err := kgo.NewClient(append(baseOpts(c.Name),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(300*time.Millisecond), // notice rebalances quickly
		kgo.SessionTimeout(10*time.Second),
		kgo.FetchMaxWait(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
			m.mu.Lock()
			for t, ps := range parts {
				if m.assigned[t] == nil {
					m.assigned[t] = map[int32]bool{}
				}
				for _, p := range ps {
					m.assigned[t][p] = true
				}
			}
			m.mu.Unlock()
			note("assigned", cl, parts)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
			m.unassign(parts)
			note("revoked", cl, parts)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
			m.unassign(parts)
			note("lost", cl, parts)
		}),
	)...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	d.members[c.Name] = m
	go d.consume(ctx, m)
	return obj{"name": c.Name}, nil
}

func (m *member) unassign(parts map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(m.assigned[t], p)
		}
	}
}

func (d *driver) consume(ctx context.Context, m *member) {
	defer close(m.done)
	for {
		fetches := m.cl.PollRecords(ctx, 1000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			emit("fetch_error", obj{"name": m.name, "topic": t, "partition": p, "error": errName(err)})
		})
		recs := fetches.Records()
		if len(recs) > 0 {
			d.mu.Lock()
			for _, r := range recs {
				d.records = append(d.records, consumed{m.name, r.Partition, r.Offset, string(r.Key)})
			}
			d.mu.Unlock()
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			if err := m.cl.CommitRecords(cctx, recs...); err != nil {
				emit("commit_error", obj{"name": m.name, "error": errName(err)})
			}
			cancel()
		}
		m.cl.AllowRebalance()
	}
}

// stop ends a member's poll loop, then closes its client, which leaves the group (LeaveGroup).
func (d *driver) stop(name string) (obj, error) {
	m, ok := d.members[name]
	if !ok {
		return nil, fmt.Errorf("no member %s", name)
	}
	delete(d.members, name)
	memberID, generation := m.cl.GroupMetadata()
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		return nil, fmt.Errorf("member %s did not stop polling", name)
	}
	m.cl.CloseAllowingRebalance()
	return obj{"name": name, "member_id": memberID, "generation": generation}, nil
}

// waitAssigned waits until the named members together own every partition of the topic, each
// some, none twice, all in one generation; it answers their assignments and member ids.
func (d *driver) waitAssigned(ctx context.Context, c *command) (obj, error) {
	for {
		assignments, ids, gens := obj{}, obj{}, map[int32]bool{}
		seen := map[int32]int{}
		ok := true
		for _, name := range c.Names {
			m, exists := d.members[name]
			if !exists {
				return nil, fmt.Errorf("no member %s", name)
			}
			ps := m.assignment(c.Topic)
			id, gen := m.cl.GroupMetadata()
			assignments[name], ids[name] = ps, id
			gens[gen] = true
			ok = ok && len(ps) > 0 && id != "" && gen > 0
			for _, p := range ps {
				seen[p]++
			}
		}
		ok = ok && len(gens) == 1 && len(seen) == c.Partitions
		for _, n := range seen {
			ok = ok && n == 1
		}
		if ok {
			var generation int32
			for g := range gens {
				generation = g
			}
			return obj{"assignments": assignments, "member_ids": ids, "generation": generation}, nil
		}
		select {
		case <-ctx.Done():
			return obj{"assignments": assignments, "member_ids": ids}, fmt.Errorf("not assigned in time: %v", assignments)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *driver) produce(ctx context.Context, c *command) (obj, error) {
	if d.producer == nil {
		d.producer = newClient("producer", kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	var recs []*kgo.Record
	for i := c.First; i < c.First+c.N; i++ {
		recs = append(recs, &kgo.Record{Topic: c.Topic, Partition: int32(i % c.Partitions),
			Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	if err := d.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, err
	}
	return obj{"produced": len(recs)}, nil
}

func (d *driver) consumed() [][]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	rows := make([][]any, 0, len(d.records))
	for _, r := range d.records {
		rows = append(rows, []any{r.name, r.partition, r.offset, r.key})
	}
	return rows
}

func (d *driver) waitConsumed(ctx context.Context, total int) (obj, error) {
	for {
		d.mu.Lock()
		n := len(d.records)
		d.mu.Unlock()
		if n >= total {
			return obj{"count": n}, nil
		}
		select {
		case <-ctx.Done():
			return obj{"count": n}, fmt.Errorf("consumed %d of %d records", n, total)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitCommitted waits until the group's committed offsets (kadm FetchOffsets) reach every
// partition's end offset (kadm ListEndOffsets).
func (d *driver) waitCommitted(ctx context.Context, group, topic string) (obj, error) {
	for {
		committed := obj{}
		ends, err := d.adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
		offsets, err := d.adm.FetchOffsets(ctx, group)
		if err == nil {
			err = offsets.Error()
		}
		done := err == nil
		if err == nil {
			ends.Each(func(e kadm.ListedOffset) {
				o, ok := offsets.Lookup(topic, e.Partition)
				if ok {
					committed[strconv.Itoa(int(e.Partition))] = o.At
				}
				done = done && ok && o.At == e.Offset
			})
		}
		if done {
			return obj{"committed": committed}, nil
		}
		select {
		case <-ctx.Done():
			return obj{"committed": committed}, fmt.Errorf("offsets not committed in time: %v (last error %v)", committed, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// -- kadm -------------------------------------------------------------------------------------

func (d *driver) createTopics(ctx context.Context, c *command) (obj, error) {
	configs := map[string]*string{}
	for k, v := range c.Configs {
		configs[k] = kadm.StringPtr(v)
	}
	resp, err := d.adm.CreateTopics(ctx, int32(c.Partitions), int16(c.ReplicationFactor), configs, c.Topics...)
	if err != nil {
		return nil, err
	}
	results := obj{}
	for _, r := range resp.Sorted() {
		cfg := obj{}
		for k, v := range r.Configs {
			if v.Value != nil {
				cfg[k] = obj{"value": *v.Value, "source": v.Source.String()}
			}
		}
		results[r.Topic] = obj{"id": hex.EncodeToString(r.ID[:]), "error": errName(r.Err),
			"partitions": r.NumPartitions, "replication_factor": r.ReplicationFactor, "configs": cfg}
	}
	return obj{"results": results}, nil
}

func nonNil(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}

func topicDetails(ts kadm.TopicDetails) obj {
	topics := obj{}
	for name, t := range ts {
		parts := []obj{}
		for _, p := range t.Partitions.Sorted() {
			parts = append(parts, obj{"partition": p.Partition, "leader": p.Leader, "leader_epoch": p.LeaderEpoch,
				"replicas": nonNil(p.Replicas), "isr": nonNil(p.ISR), "offline": nonNil(p.OfflineReplicas), "error": errName(p.Err)})
		}
		topics[name] = obj{"id": hex.EncodeToString(t.ID[:]), "internal": t.IsInternal, "partitions": parts,
			"error": errName(t.Err)}
	}
	return topics
}

func (d *driver) listTopics(ctx context.Context, topics []string) (obj, error) {
	ts, err := d.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	return obj{"topics": topicDetails(ts)}, nil
}

func (d *driver) metadata(ctx context.Context, topics []string) (obj, error) {
	m, err := d.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	brokers := []obj{}
	for _, b := range m.Brokers {
		brokers = append(brokers, obj{"id": b.NodeID, "host": b.Host, "port": b.Port, "rack": b.Rack})
	}
	return obj{"cluster": m.Cluster, "controller": m.Controller, "brokers": brokers, "topics": topicDetails(m.Topics)}, nil
}

func (d *driver) describeGroups(ctx context.Context, groups []string) (obj, error) {
	described, err := d.adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, err
	}
	result := obj{}
	for name, g := range described {
		members := []obj{}
		for _, m := range g.Members {
			entry := obj{"member_id": m.MemberID, "instance_id": m.InstanceID, "client_id": m.ClientID, "client_host": m.ClientHost}
			if meta, ok := m.Join.AsConsumer(); ok {
				entry["topics"] = meta.Topics
			}
			if a, ok := m.Assigned.AsConsumer(); ok {
				assigned := obj{}
				for _, t := range a.Topics {
					ps := append([]int32(nil), t.Partitions...)
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					assigned[t.Topic] = ps
				}
				entry["assignment"] = assigned
			}
			members = append(members, entry)
		}
		result[name] = obj{"state": g.State, "protocol_type": g.ProtocolType, "protocol": g.Protocol,
			"coordinator": g.Coordinator.NodeID, "members": members, "error": errName(g.Err)}
	}
	return obj{"groups": result}, nil
}

func (d *driver) listGroups(ctx context.Context) (obj, error) {
	listed, err := d.adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	groups := []obj{}
	for _, g := range listed.Sorted() {
		groups = append(groups, obj{"group": g.Group, "coordinator": g.Coordinator, "protocol_type": g.ProtocolType,
			"state": g.State})
	}
	return obj{"groups": groups}, nil
}

func (d *driver) fetchOffsets(ctx context.Context, group string) (obj, error) {
	offsets, err := d.adm.FetchOffsets(ctx, group)
	if err != nil {
		return obj{"error_name": errName(err)}, nil
	}
	result := obj{}
	for topic, ps := range offsets {
		parts := obj{}
		for p, o := range ps {
			parts[strconv.Itoa(int(p))] = obj{"offset": o.At, "leader_epoch": o.LeaderEpoch, "metadata": o.Metadata,
				"error": errName(o.Err)}
		}
		result[topic] = parts
	}
	return obj{"offsets": result}, nil
}

func (d *driver) deleteGroups(ctx context.Context, groups []string) (obj, error) {
	resp, err := d.adm.DeleteGroups(ctx, groups...)
	if err != nil {
		return nil, err
	}
	result := obj{}
	for _, r := range resp.Sorted() {
		result[r.Group] = errName(r.Err)
	}
	return obj{"results": result}, nil
}
