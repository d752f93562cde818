package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/capacity"
)

func TestShareWithoutMetricsKeepsTheCeiling(t *testing.T) {
	srv := &server{url: "http://gpu1:30000", limiter: capacity.NewKVSizer(&backend.ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 256})}
	var notes []string
	c := newShareControl(newPool([]*server{srv}, time.Second), []*server{srv}, nil, false, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
	k := srv.limiter.(*capacity.KVSizer)
	k.Resize(1020, 2300)
	if got, every := k.Limit(), c.every(); got != 7 || every != capacity.ShareStartInterval {
		t.Fatalf("before the first reading: limit %d, readings every %v; want 7, every %v", got, every, capacity.ShareStartInterval)
	}
	c.reading(context.Background(), 0, nil)
	if got := k.Limit(); got != 53 {
		t.Fatalf("a server without /metrics, without --shared: limit %d, want the 53 a run alone keeps", got)
	}
	if c.every() != 0 || len(notes) != 1 || !strings.Contains(notes[0], "sized as if no other run used it") || !strings.Contains(notes[0], "--shared probes") {
		t.Fatalf("readings every %v, notes %q", c.every(), notes)
	}
}

// refusingBackend refuses every request.
type refusingBackend struct{ backend.Backend }

func (refusingBackend) Do(context.Context, string, *backend.Request) (*backend.Result, error) {
	return nil, &backend.Error{Kind: backend.KindHTTP, Status: 400, Message: "no"}
}

func TestProbesRefusedStopTheSharing(t *testing.T) {
	srv := &server{url: "http://gpu1:30000", limiter: capacity.NewKVSizer(&backend.ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 256})}
	var notes []string
	p := newPool([]*server{srv}, time.Second)
	c := newShareControl(p, []*server{srv}, refusingBackend{}, true, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
	k := srv.limiter.(*capacity.KVSizer)
	k.Resize(1020, 2300)
	k.ShareByProbe()
	c.probe(context.Background(), srv) // returns after probeFailed refusals
	if got := k.Limit(); got != 53 {
		t.Fatalf("a server that refuses probes: limit %d, want the 53 a run alone keeps", got)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "sized as if no other run used it") {
		t.Fatalf("notes %q", notes)
	}
}
