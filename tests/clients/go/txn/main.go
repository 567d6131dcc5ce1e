// fbtxn drives franz-go (kgo) transactions against a fakebroker cluster for
// tests/clients/test_franz_go_transactions.py. It is its own program (package main in this
// directory of the tests/clients/go module), built by that test like fbclient.
//
//	fbtxn BOOTSTRAP
//
// It takes one JSON command per stdin line ({"id": 1, "cmd": "begin", ...}) and answers each
// with {"type": "reply", "id": 1, ...} ("error" when the command itself broke). A transactional
// call the broker refuses is not a broken command: its reply has "failure" (Kafka's error name,
// code and the error's text) so the test can assert what franz-go reported. Other lines are notes
// (assigned, revoked, end_error, ...). The first line is {"type": "version", ...}.
//
// Exactly-once members are kgo.GroupTransactSession clients (read_committed, RequireStableFetchOffsets)
// that copy each record k<i>/v<i> of the input to the same partition of the output as k<i>/t-v<i>,
// one transaction per poll. Plain transactional clients (open/begin/produce/end) cover timeouts
// and coordinator moves. The client's log goes to stderr (FAKEBROKER_GO_LOG: debug, info, warn, ...).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"fakebroker/tests/clients/go/lines"
)

const clientID = "fakebroker-franz-go-txn"

var (
	seeds []string
	emit  = lines.Emit
)

type obj = lines.Obj

// failure describes an error franz-go returned: Kafka's name and code when it wraps a broker
// error, and its text.
func failure(err error) obj {
	if err == nil {
		return nil
	}
	f := obj{"text": err.Error(), "kafka": nil, "code": nil, "retriable": nil}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		f["kafka"], f["code"], f["retriable"] = ke.Message, ke.Code, ke.Retriable
	}
	return f
}

func baseOpts(name string) []kgo.Opt {
	return lines.ClientOpts(seeds, clientID+"-"+name, name)
}

// -- exactly-once members -------------------------------------------------------------------------
type member struct {
	name     string
	sess     *kgo.GroupTransactSession
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	owned    map[int32]bool
	commits  int // transactions End committed
	aborts   int // transactions End aborted (a rebalance or an abortable error)
	records  int // input records whose transaction committed
	failures []obj
}

func (m *member) note(kind string, fields obj) {
	fields["name"] = m.name
	emit(kind, fields)
}

func (m *member) stats() obj {
	m.mu.Lock()
	defer m.mu.Unlock()
	owned := []int32{}
	for p := range m.owned {
		owned = append(owned, p)
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i] < owned[j] })
	return obj{"commits": m.commits, "aborts": m.aborts, "records": m.records, "failures": m.failures, "owned": owned}
}

func (m *member) track(parts map[string][]int32, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range parts {
		for _, p := range ps {
			if add {
				m.owned[p] = true
			} else {
				delete(m.owned, p)
			}
		}
	}
}

func (m *member) fail(what string, err error) {
	m.mu.Lock()
	m.failures = append(m.failures, obj{"what": what, "error": failure(err)})
	m.mu.Unlock()
	m.note("member_failure", obj{"what": what, "error": failure(err)})
}

func startMember(c *command) (*member, error) {
	m := &member{name: c.Name, done: make(chan struct{}), owned: map[int32]bool{}, failures: []obj{}}
	opts := append(baseOpts(c.Name),
		kgo.TransactionalID(c.TransactionalID),
		kgo.TransactionTimeout(20*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, added map[string][]int32) {
			m.track(added, true)
			m.note("assigned", obj{"partitions": added})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			m.track(revoked, false)
			m.note("revoked", obj{"partitions": revoked})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			m.track(lost, false)
			m.note("lost", obj{"partitions": lost})
		}),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, err
	}
	m.sess = sess
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx, c.Output, c.MaxRecords, time.Duration(c.PaceMs)*time.Millisecond)
	return m, nil
}

// run: poll, Begin, produce the transformed records, End(TryCommit), until stopped. A stop only
// cancels the poll: a transaction in progress is always ended.
func (m *member) run(ctx context.Context, output string, maxRecords int, pace time.Duration) {
	defer close(m.done)
	if maxRecords <= 0 {
		maxRecords = 60
	}
	for ctx.Err() == nil {
		fetches := m.sess.PollRecords(ctx, maxRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			m.fail(fmt.Sprintf("fetch %s-%d", t, p), err)
		})
		n := fetches.NumRecords()
		if n == 0 {
			continue
		}
		if err := m.sess.Begin(); err != nil {
			m.fail("begin", err)
			return
		}
		fetches.EachRecord(func(r *kgo.Record) {
			value := append([]byte("t-"), r.Value...)
			rec := &kgo.Record{Topic: output, Partition: r.Partition, Key: r.Key, Value: value}
			m.sess.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
				if err != nil {
					m.fail("produce", err)
				}
			})
		})
		time.Sleep(pace)
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		committed, err := m.sess.End(endCtx, kgo.TryCommit)
		cancel()
		m.mu.Lock()
		if committed {
			m.commits++
			m.records += n
		} else {
			m.aborts++
		}
		m.mu.Unlock()
		if err != nil {
			m.fail("end", err)
			return
		}
		if !committed {
			m.note("aborted", obj{"records": n})
		}
	}
}

func (m *member) stop() obj {
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(40 * time.Second):
		m.fail("stop", errors.New("the member loop did not end in 40 s"))
	}
	m.sess.Close() // leaves the group
	return m.stats()
}

// -- the driver ----------------------------------------------------------------------------------
type command struct {
	ID              int      `json:"id"`
	Cmd             string   `json:"cmd"`
	Name            string   `json:"name"`
	Group           string   `json:"group"`
	TransactionalID string   `json:"transactional_id"`
	Input           string   `json:"input"`
	Output          string   `json:"output"`
	Topic           string   `json:"topic"`
	Keys            []string `json:"keys"`
	Partition       int32    `json:"partition"`
	First           int      `json:"first"`
	N               int      `json:"n"`
	Partitions      int      `json:"partitions"`
	MaxRecords      int      `json:"max_records"`
	PaceMs          int      `json:"pace_ms"`
	TxnTimeoutMs    int      `json:"txn_timeout_ms"`
	Commit          bool     `json:"commit"`
	TimeoutMs       int      `json:"timeout_ms"`
}

type driver struct {
	plain   *kgo.Client
	members map[string]*member
	txns    map[string]*kgo.Client
}

func (d *driver) handle(c *command) (obj, error) {
	timeout := 20 * time.Second
	if c.TimeoutMs > 0 {
		timeout = time.Duration(c.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch c.Cmd {
	case "produce": // plain input: k<i>/v<i> to partition i % partitions
		if d.plain == nil {
			cl, err := kgo.NewClient(append(baseOpts("input"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
			if err != nil {
				return nil, err
			}
			d.plain = cl
		}
		var rs []*kgo.Record
		for i := c.First; i < c.First+c.N; i++ {
			rs = append(rs, &kgo.Record{Topic: c.Topic, Partition: int32(i % c.Partitions),
				Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
		}
		return obj{}, d.plain.ProduceSync(ctx, rs...).FirstErr()
	case "startMember":
		if d.members[c.Name] != nil {
			return nil, fmt.Errorf("member %s exists", c.Name)
		}
		m, err := startMember(c)
		if err != nil {
			return nil, err
		}
		d.members[c.Name] = m
		return obj{}, nil
	case "stopMember":
		m := d.members[c.Name]
		if m == nil {
			return nil, fmt.Errorf("no member %s", c.Name)
		}
		delete(d.members, c.Name)
		return m.stop(), nil
	case "stats":
		all := obj{}
		for name, m := range d.members {
			all[name] = m.stats()
		}
		return obj{"members": all}, nil
	case "open": // a plain transactional client
		// MetadataMinAge: a produce kgo retries (NOT_ENOUGH_REPLICAS while a new transaction
		// coordinator loads) waits for a metadata refresh, by default at most every 5 s
		opts := append(baseOpts(c.Name), kgo.TransactionalID(c.TransactionalID),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond))
		if c.TxnTimeoutMs > 0 {
			opts = append(opts, kgo.TransactionTimeout(time.Duration(c.TxnTimeoutMs)*time.Millisecond))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		d.txns[c.Name] = cl
		return obj{}, nil
	case "begin":
		return result(d.txns[c.Name].BeginTransaction(), nil), nil
	case "produceTxn": // keys to one partition, in the open transaction; waits for the acks
		var rs []*kgo.Record
		for _, k := range c.Keys {
			rs = append(rs, &kgo.Record{Topic: c.Topic, Partition: c.Partition, Key: []byte(k), Value: []byte("val-" + k)})
		}
		results := d.txns[c.Name].ProduceSync(ctx, rs...)
		offsets := []int64{}
		for _, r := range results {
			if r.Err == nil {
				offsets = append(offsets, r.Record.Offset)
			}
		}
		return result(results.FirstErr(), obj{"offsets": offsets}), nil
	case "end": // Flush, then EndTransaction(TryCommit or TryAbort)
		cl := d.txns[c.Name]
		if err := cl.Flush(ctx); err != nil {
			return result(err, nil), nil
		}
		try := kgo.TryAbort
		if c.Commit {
			try = kgo.TryCommit
		}
		return result(cl.EndTransaction(ctx, try), nil), nil
	case "close":
		d.txns[c.Name].Close()
		delete(d.txns, c.Name)
		return obj{}, nil
	case "exit":
		return obj{}, nil
	}
	return nil, fmt.Errorf("unknown command %q", c.Cmd)
}

func result(err error, fields obj) obj {
	if fields == nil {
		fields = obj{}
	}
	fields["ok"] = err == nil
	if err != nil {
		fields["failure"] = failure(err)
	}
	return fields
}

func (d *driver) shutdown() {
	for name, m := range d.members {
		m.stop()
		delete(d.members, name)
	}
	for _, cl := range d.txns {
		cl.Close()
	}
	if d.plain != nil {
		d.plain.Close()
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fbtxn BOOTSTRAP")
		os.Exit(2)
	}
	seeds = strings.Split(os.Args[1], ",")
	emit("version", lines.Versions())
	d := &driver{members: map[string]*member{}, txns: map[string]*kgo.Client{}}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			emit("error", obj{"message": fmt.Sprintf("bad command %q: %v", in.Text(), err)})
			os.Exit(1)
		}
		reply, err := d.handle(&c)
		if reply == nil {
			reply = obj{}
		}
		reply["id"] = c.ID
		if err != nil {
			reply["error"] = err.Error()
		}
		if c.Cmd == "exit" {
			d.shutdown()
			emit("reply", reply)
			emit("end", obj{})
			return
		}
		emit("reply", reply)
	}
	d.shutdown()
	emit("end", obj{})
}
