// fbtokens drives franz-go (kgo) through delegation tokens against a fakebroker cluster for
// tests/clients/test_franz_go_tokens.py. It is its own program (package main in this directory
// of the tests/clients/go module), built by that test like fbclient.
//
//	fbtokens BOOTSTRAP CA_FILE TOPIC N
//
// Over SASL_SSL (TLS trusting CA_FILE, the host name checked), as alice (SCRAM-SHA-512, password
// alice-secret): CreateDelegationToken (kmsg; franz-go's kadm has no token API), then a client
// logging in with the token (scram.Auth{User: token id, Pass: base64 HMAC, IsToken: true}: the
// "tokenauth=true" extension) produces N records to TOPIC and asks for a token of its own; alice
// expires the token (ExpireDelegationToken, period -1) and a new client with it tries to produce.
// One JSON object per stdout line: {"type": "version", ...} first, {"type": "end"} last, an
// {"type": "error", ...} and exit 1 when a step itself broke. franz-go's log goes to stderr
// (FAKEBROKER_GO_LOG).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"fakebroker/tests/clients/go/lines"
)

type obj = lines.Obj

var emit = lines.Emit

func fail(what string, err error) {
	emit("error", obj{"what": what, "error": err.Error()})
	os.Exit(1)
}

func client(seeds []string, tlsCfg *tls.Config, name string, auth scram.Auth, extra ...kgo.Opt) *kgo.Client {
	opts := append(lines.ClientOpts(seeds, "fakebroker-franz-go-"+name, name),
		kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(auth.AsSha512Mechanism()),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(10*time.Second),
	)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		fail("client "+name, err)
	}
	return cl
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: fbtokens BOOTSTRAP CA_FILE TOPIC N")
		os.Exit(2)
	}
	seeds := strings.Split(os.Args[1], ",")
	topic := os.Args[3]
	n, err := strconv.Atoi(os.Args[4])
	if err != nil {
		fail("N", err)
	}
	pem, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail("CA file", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail("CA file", fmt.Errorf("no certificate in %s", os.Args[2]))
	}
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	emit("version", lines.Versions())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alice := client(seeds, tlsCfg, "alice", scram.Auth{User: "alice", Pass: "alice-secret"})
	defer alice.Close()
	create := kmsg.NewPtrCreateDelegationTokenRequest()
	create.MaxLifetimeMillis = -1
	created, err := create.RequestWith(ctx, alice)
	if err != nil {
		fail("CreateDelegationToken", err)
	}
	emit("created", obj{"error_code": created.ErrorCode, "owner": created.PrincipalType + ":" + created.PrincipalName,
		"token_id": created.TokenID, "hmac": base64.StdEncoding.EncodeToString(created.HMAC),
		"expiry": created.ExpiryTimestamp})
	if created.ErrorCode != 0 {
		fail("CreateDelegationToken", fmt.Errorf("error code %d", created.ErrorCode))
	}
	token := scram.Auth{User: created.TokenID, Pass: base64.StdEncoding.EncodeToString(created.HMAC), IsToken: true}

	holder := client(seeds, tlsCfg, "token", token, kgo.DefaultProduceTopic(topic))
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i))}
		res := holder.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			fail("produce with the token", err)
		}
		emit("sent", obj{"i": i, "partition": res[0].Record.Partition, "offset": res[0].Record.Offset})
	}
	again, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctx, holder)
	if err != nil {
		fail("CreateDelegationToken with the token", err)
	}
	emit("token_creates", obj{"error_code": again.ErrorCode})
	holder.Close()

	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC = created.HMAC
	expire.ExpiryPeriodMillis = -1
	expired, err := expire.RequestWith(ctx, alice)
	if err != nil {
		fail("ExpireDelegationToken", err)
	}
	emit("expired", obj{"error_code": expired.ErrorCode, "expiry": expired.ExpiryTimestamp})

	// a request, not a produce: kgo gives a produce's records until their timeout, a request the
	// login's error
	late := client(seeds, tlsCfg, "expired-token", token)
	shortCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(shortCtx, late)
	stop()
	if err != nil {
		emit("refused", obj{"error": err.Error()})
	} else {
		emit("refused", obj{"error": nil})
	}
	late.Close()
	emit("end", obj{})
}
