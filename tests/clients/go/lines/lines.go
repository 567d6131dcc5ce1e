// Package lines holds what the franz-go test drivers share: one JSON object per line on
// stdout, franz-go's logger at FAKEBROKER_GO_LOG's level, and the library versions linked in.
package lines

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Obj is one JSON object.
type Obj = map[string]any

var (
	mu  sync.Mutex
	enc = json.NewEncoder(os.Stdout)
)

// Emit writes {"type": kind, ...fields} as one line; a driver whose reader is gone exits.
func Emit(kind string, fields Obj) {
	line := Obj{"type": kind}
	for k, v := range fields {
		line[k] = v
	}
	mu.Lock()
	defer mu.Unlock()
	if err := enc.Encode(line); err != nil {
		fmt.Fprintln(os.Stderr, "cannot write:", err)
		os.Exit(3)
	}
}

// LogLevel is franz-go's log level named by FAKEBROKER_GO_LOG (warn by default).
func LogLevel() kgo.LogLevel {
	switch strings.ToLower(os.Getenv("FAKEBROKER_GO_LOG")) {
	case "debug":
		return kgo.LogLevelDebug
	case "info":
		return kgo.LogLevelInfo
	case "error":
		return kgo.LogLevelError
	case "none":
		return kgo.LogLevelNone
	default:
		return kgo.LogLevelWarn
	}
}

// ClientOpts are the options every client starts with: the seeds, its client id, and a
// logger on stderr whose lines name the client.
func ClientOpts(seeds []string, clientID, name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(clientID),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, LogLevel(), func() string {
			return time.Now().Format("15:04:05.000") + " [" + name + "] "
		})),
	}
}

// Versions names Go's version and those of the franz-go modules linked in.
func Versions() Obj {
	v := Obj{"go": runtime.Version()}
	names := map[string]string{
		"github.com/twmb/franz-go":          "franz_go",
		"github.com/twmb/franz-go/pkg/kadm": "kadm",
		"github.com/twmb/franz-go/pkg/kmsg": "kmsg",
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if name, known := names[dep.Path]; known {
				v[name] = dep.Version
			}
		}
	}
	return v
}
