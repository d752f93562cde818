package generate

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/backend"
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
		t.Fatalf("159,277 / 3,320 x 1.1: got %d, want 53 (%s)", got, k)
	}
	k.resize(10, 10)
	if got := k.limit(); got != 282 {
		t.Fatalf("capped by max_running_requests 256 x 1.1: got %d", got)
	}
}

func TestReorder(t *testing.T) {
	r := newReorder(3)
	if got := r.put(1, []byte("b")); len(got) != 0 {
		t.Fatalf("wrote %q before record 0", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if r.waitRoom(ctx, 3) {
		t.Fatal("record 3 may start while record 0 is not written (window 3)")
	}
	got := r.put(0, []byte("a"))
	if len(got) != 2 || string(got[0]) != "a" || string(got[1]) != "b" {
		t.Fatalf("got %q", got)
	}
	r.put(2, nil) // a record without output
	if got := r.put(4, []byte("e")); len(got) != 0 {
		t.Fatalf("wrote %q before record 3", got)
	}
	if got := r.rest(); len(got) != 1 || string(got[0]) != "e" {
		t.Fatalf("rest %q", got)
	}
}

func TestBudgetReservesWorstCase(t *testing.T) {
	b := newBudget(&config{tokenBudget: 120, countMode: record.CountTotal, params: backend.Params{MaxTokens: 40}}, 10, 0)
	r1, ok1 := b.reserve(5) // 45
	_, ok2 := b.reserve(5)  // 90
	_, ok3 := b.reserve(5)  // 135: over
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("reservations: %v %v %v", ok1, ok2, ok3)
	}
	if !b.commit(r1, 20, &backend.Result{}) {
		t.Fatal("a result within its reservation was refused")
	}
	if _, ok := b.reserve(5); !ok {
		t.Fatal("the unused reservation was not returned")
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ slash", "nl\n tab\t cr\r bell\x07", "ünïcødé 日本", "bad \xff utf8", "</script>"} {
		raw := appendString(nil, s)
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
