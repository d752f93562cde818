package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/jsonl"
	"github.com/synthpipe/synthpipe/lib/record"
)

// TestLengthModelCorrectsShortFirstBias: early in a run only the short
// answers have finished; counting the requests in flight as lower bounds
// brings the estimate much closer to the true mean than the completed
// answers alone.
func TestLengthModelCorrectsShortFirstBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rate = 100.0 // tokens per second per request
	m := newLengthModel(10240)
	var trueSum, doneSum float64
	var done int
	var ages []time.Duration
	const elapsed = 20.0 // seconds: answers up to 2,000 tokens are done
	for i := 0; i < 400; i++ {
		l := math.Min(math.Round(2300*math.Exp(0.5*rng.NormFloat64())), 10240)
		trueSum += l
		if l/rate <= elapsed {
			m.observe(int(l), time.Duration(l/rate*float64(time.Second)))
			doneSum += l
			done++
		} else {
			ages = append(ages, time.Duration(elapsed*float64(time.Second)))
		}
	}
	trueMean, naive := trueSum/400, doneSum/float64(done)
	est := m.estimate(ages)
	if math.Abs(est.mean-trueMean) > 0.25*math.Abs(naive-trueMean) {
		t.Fatalf("estimate %.0f, completed-only %.0f, true %.0f: not corrected enough", est.mean, naive, trueMean)
	}
	t.Logf("true mean %.0f, completed-only %.0f, estimate %.0f", trueMean, naive, est.mean)
}

func TestAIMD(t *testing.T) {
	a := newAIMD()
	for i := 0; i < 16*4; i++ {
		a.onSuccess()
	}
	if got := a.limit(); got < 19 || got > 21 {
		t.Fatalf("after 4 windows of successes: %d, want about 20", got)
	}
	a.onRateLimit()
	a.onRateLimit() // the same burst: not halved twice
	if got := a.limit(); got < 9 || got > 11 {
		t.Fatalf("after a burst of 429s: %d, want about 10", got)
	}
}

func TestKVSizer(t *testing.T) {
	k := newKVSizer(&backend.ServerInfo{MaxTotalTokens: 159277, MaxRunningRequests: 256})
	k.resize(1020, 2300)
	if got := k.limit(); got != 53 {
		t.Fatalf("159,277 / 3,320 x 1.1: got %d, want 53", got)
	}
	if got := k.report(); !strings.HasPrefix(got, "concurrency 53: ") {
		t.Fatalf("the first target is reported: %q", got)
	}
	k.resize(10, 10)
	if got := k.limit(); got != 282 {
		t.Fatalf("capped by max_running_requests 256 x 1.1: got %d", got)
	}
	// The log line explains the figure it gives (the margin is on the cap too).
	if got, want := k.report(), "concurrency 282: "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "capped at max_running_requests 256, +10% queue margin") {
		t.Errorf("the explanation %q does not lead from the cap to 282", got)
	}
}

// An estimate that wavers around a target is reported once: each change is
// measured from the target last reported, not from the last one computed.
func TestKVSizerReportsOnlyLargeChanges(t *testing.T) {
	k := newKVSizer(&backend.ServerInfo{MaxTotalTokens: 130000})
	var said []int
	// Targets about 130, 121, 130, 120, 131, 130, then about 100 twice (a
	// drift of a fifth, and a quarter is what is said), then about 80.
	for _, perRequest := range []float64{1100, 1180, 1100, 1190, 1090, 1100, 1430, 1420, 1800, 1790} {
		k.resize(perRequest, 0)
		if why := k.report(); why != "" {
			var n int
			fmt.Sscanf(why, "concurrency %d:", &n)
			said = append(said, n)
		}
	}
	if fmt.Sprint(said) != "[131 80]" {
		t.Fatalf("reported %v, want [131 80]: the first target, then the one that moved by more than a quarter", said)
	}
}

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
	b := newBudget(&config{tokenBudget: 120, countMode: record.CountTotal, params: backend.Params{MaxTokens: 40}}, 10, 0)
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
	b := newBudget(&config{tokenBudget: 100, countMode: record.CountTotal, params: backend.Params{MaxTokens: 40}}, 0, 0)
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
	b := newBudget(&config{tokenBudget: 3000, countMode: record.CountTotal}, 0, 0)
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
	got := string(addMembers([]byte(`{"id":"a","text":"old"}`), ms, true))
	if got != `{"id":"a","text":"x","completion_tokens":1}` {
		t.Fatalf("replace: got %s", got)
	}
}

// TestBudgetReservesEachRequestsOwnLimit: a request's reservation is its own
// answer limit (an OpenAI Batch line's max_tokens), not --max-tokens.
func TestBudgetReservesEachRequestsOwnLimit(t *testing.T) {
	b := newBudget(&config{tokenBudget: 100, countMode: record.CountTotal, params: backend.Params{MaxTokens: 10}}, 0, 0)
	if _, err := b.reserve(context.Background(), 5, 200); !errors.Is(err, errBudgetReached) {
		t.Fatalf("a request that may write 205 tokens fit a budget of 100: %v", err)
	}
	if _, err := b.reserve(context.Background(), 5, 90); err != nil {
		t.Fatalf("a request that may write 95 tokens did not fit a budget of 100: %v", err)
	}
}
