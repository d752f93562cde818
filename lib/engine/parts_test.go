package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

func TestReorder(t *testing.T) {
	r := newReorder(3)
	line := func(s string) outLine { return outLine{line: []byte(s), answer: true} }
	if got := r.put(1, line("b")); len(got) != 0 {
		t.Fatalf("wrote %v before record 0", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if r.waitRoom(ctx, 3) {
		t.Fatal("record 3 may start while record 0 is not written (window 3)")
	}
	got := r.put(0, line("a"))
	if len(got) != 2 || string(got[0].line) != "a" || string(got[1].line) != "b" {
		t.Fatalf("got %v", got)
	}
	r.put(2, outLine{}) // a record without output
	if got := r.put(4, line("e")); len(got) != 0 {
		t.Fatalf("wrote %v before record 3", got)
	}
	if got := r.rest(); len(got) != 1 || string(got[0].line) != "e" || !got[0].answer {
		t.Fatalf("rest %v", got)
	}
}

func TestBudgetReservesWorstCase(t *testing.T) {
	ctx := context.Background()
	b := newBudget(&Config{TokenBudget: 120, CountMode: record.CountTotal, Params: backend.Params{MaxTokens: 40}}, 10, 0)
	r1, err1 := b.reserve(ctx, 5, 40) // 45
	r2, err2 := b.reserve(ctx, 5, 40) // 90
	if err1 != nil || err2 != nil {
		t.Fatalf("reservations: %v %v", err1, err2)
	}
	// 135 does not fit while the two are in flight: it waits for them.
	third := make(chan error, 1)
	go func() {
		_, err := b.reserve(ctx, 5, 40)
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("a reservation past the budget returned %v instead of waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	if b.commit(r1, 20, &backend.Result{}) { // 10 + 20 + 45 + 45 = 120
		t.Fatal("a result within its reservation was said to reach the budget")
	}
	if err := <-third; err != nil {
		t.Fatalf("the unused reservation was not returned: %v", err)
	}
	b.cancel(r2)
	// Spent 30 + in flight 45 + 45 = 120: fits exactly, then nothing fits.
	r4, err := b.reserve(ctx, 5, 40)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.reserve(waitCtx, 5, 40); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with requests in flight: %v, want a wait ended by the context", err)
	}
	b.commit(r4, 45, &backend.Result{})
	b.mu.Lock()
	held := b.held
	b.mu.Unlock()
	if held != 1 {
		t.Fatalf("%d reservations held, want 1", held)
	}
}

func TestBudgetReachedOnlyWithNothingInFlight(t *testing.T) {
	b := newBudget(&Config{TokenBudget: 100, CountMode: record.CountTotal, Params: backend.Params{MaxTokens: 40}}, 0, 0)
	r, err := b.reserve(context.Background(), 5, 40)
	if err != nil {
		t.Fatal(err)
	}
	b.commit(r, 45, &backend.Result{}) // spent 45, nothing in flight
	r, err = b.reserve(context.Background(), 5, 40)
	if err != nil {
		t.Fatal(err)
	}
	b.commit(r, 45, &backend.Result{}) // spent 90
	if _, err := b.reserve(context.Background(), 5, 40); !errors.Is(err, errBudgetReached) {
		t.Fatalf("nothing in flight and 45 tokens do not fit in 10: %v, want errBudgetReached", err)
	}
	want := "budget reached: the next request (up to 45 tokens: its prompt and --max-tokens 40) does not fit in the 10 left, even with nothing in flight"
	if got := b.stopReason(); got != want {
		t.Errorf("stop reason:\n%s\nwant\n%s", got, want)
	}
}

// A budget smaller than one request's worst case (the default --max-tokens
// of 4,096 with a budget of 3,000) starts nothing: the reason says why and
// what to change.
func TestBudgetSmallerThanOneRequest(t *testing.T) {
	b := newBudget(&Config{TokenBudget: 3000, CountMode: record.CountTotal}, 0, 0)
	if _, err := b.reserve(context.Background(), 27, 4096); !errors.Is(err, errBudgetReached) {
		t.Fatalf("4,123 tokens in a budget of 3,000: %v, want errBudgetReached", err)
	}
	want := "budget reached: the next request (up to 4,123 tokens: its prompt and --max-tokens 4,096) does not fit in the 3,000 left, even with nothing in flight; " +
		"--max-tokens 4,096 is more than the whole --token-budget 3,000 allows one request: lower --max-tokens or raise the budget"
	if got := b.stopReason(); got != want {
		t.Errorf("stop reason:\n%s\nwant\n%s", got, want)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ slash", "nl\n tab\t cr\r bell\x07", "ünïcødé 日本", "bad \xff utf8", "</script>"} {
		raw := jsonl.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, raw, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q -> %s -> %q, want %q", s, raw, back, wantBack)
		}
	}
}

func TestAddMembers(t *testing.T) {
	ms := []member{{"text", []byte(`"x"`)}, {"completion_tokens", []byte("1")}}
	cases := []struct{ in, want string }{
		{`{"id":"a"}`, `{"id":"a","text":"x","completion_tokens":1}`},
		{`{"id":"a" } `, `{"id":"a","text":"x","completion_tokens":1}`},
		{`{}`, `{"text":"x","completion_tokens":1}`},
	}
	for _, tc := range cases {
		if got := string(addMembers([]byte(tc.in), ms, false)); got != tc.want {
			t.Fatalf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	replaced := []struct{ in, want string }{
		{`{"id":"a","text":"old"}`, `{"id":"a","text":"x","completion_tokens":1}`},
		// Where the key was, in its place; a nested key is not the record's.
		{`{"completion_tokens":[1,2],"m":{"text":"in"},"id":"a"}`, `{"completion_tokens":1,"m":{"text":"in"},"id":"a","text":"x"}`},
		// Keys compare as decoded text; the first of two is replaced.
		{`{ "te\u0078t" : "old" , "text":"second" } `, `{ "te\u0078t" : "x" , "text":"second","completion_tokens":1}`},
		{`{"text":"old","completion_tokens":7}`, `{"text":"x","completion_tokens":1}`},
		{`{}`, `{"text":"x","completion_tokens":1}`},
	}
	for _, tc := range replaced {
		if got := string(addMembers([]byte(tc.in), ms, true)); got != tc.want {
			t.Fatalf("replace %s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestBudgetReservesEachRequestsOwnLimit: a request's reservation is its own
// answer limit (an OpenAI Batch line's max_tokens), not --max-tokens.
func TestBudgetReservesEachRequestsOwnLimit(t *testing.T) {
	b := newBudget(&Config{TokenBudget: 100, CountMode: record.CountTotal, Params: backend.Params{MaxTokens: 10}}, 0, 0)
	if _, err := b.reserve(context.Background(), 5, 200); !errors.Is(err, errBudgetReached) {
		t.Fatalf("a request that may write 205 tokens fit a budget of 100: %v", err)
	}
	if _, err := b.reserve(context.Background(), 5, 90); err != nil {
		t.Fatalf("a request that may write 95 tokens did not fit a budget of 100: %v", err)
	}
}
