package generate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/record"
	"github.com/synthpipe/synthpipe/lib/sim"
)

// conversationRequests are n three-turn chat conversations (--turns all).
func conversationRequests(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"c%d","messages":[{"role":"user","content":"question %d"},{"role":"assistant","content":"SOURCE"},`+
			`{"role":"user","content":"and then?"},{"role":"assistant","content":"SOURCE"},{"role":"user","content":"why?"}]}`+"\n", i, i)
	}
	return b.String()
}

var summaryBudgetTokens = regexp.MustCompile(`budget ([0-9,]+)/([0-9,]+) total tokens`)

// spentByRecords is what budget-cut and tokstat count of the output:
// lib/record's rule, every turn's prompt and answer.
func spentByRecords(t *testing.T, stdout string) (tokens int64, ended map[string]int) {
	t.Helper()
	scan := record.NewScanner("id", true, "")
	ended = map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		in, err := scan.Scan([]byte(l))
		if err != nil || in.Conversation == nil {
			t.Fatalf("%v: not a conversation: %.300s", err, l)
		}
		tokens += in.Tokens(record.CountTotal)
		ended[in.Conversation.Ended]++
	}
	return tokens, ended
}

// TestConversationTokenBudget: under --token-budget, conversations book
// every turn before sending it, so that what the output holds, counted as
// budget-cut counts it, is what generate counted, and within the budget;
// conversations under way are not starved of their later turns by new ones.
func TestConversationTokenBudget(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 6} })
	const limit = 1500
	r := runGenerate(t, conversationRequests(60), "--backend", "openai", "--model", "m", "--url", url+"/v1",
		"--turns", "all", "--max-tokens", "8", "--token-budget", strconv.Itoa(limit))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	spent, ended := spentByRecords(t, r.stdout)
	m := summaryBudgetTokens.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no budget figure in the summary: %s", r.stderr)
	}
	if got := strings.ReplaceAll(m[1], ",", ""); got != strconv.FormatInt(spent, 10) {
		t.Errorf("generate counted %s tokens, its output holds %d by lib/record's rule", got, spent)
	}
	if spent > limit {
		t.Errorf("the output holds %d tokens, past the budget of %d", spent, limit)
	}
	if ended["done"] == 0 || ended["done"] < 3*ended["budget"] {
		t.Errorf("ended %v: new conversations took the room of the later turns of those under way", ended)
	}
	for why := range ended {
		if why != "done" && why != "budget" {
			t.Errorf("a conversation ended %q", why)
		}
	}
}

// TestConversationCostBudget: --cost-budget counts every turn's charge;
// the money generate reports is the sum of the usage.cost of every turn it
// wrote, and stays within the budget.
func TestConversationCostBudget(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 6}
		c.PromptPrice, c.CompletionPrice = 0.0001, 0.0004
	})
	const limit = 0.2
	r := runGenerate(t, conversationRequests(60), "--backend", "openai", "--model", "m", "--url", url+"/v1",
		"--turns", "all", "--max-tokens", "8", "--cost-budget", "0.2", "--max-price", "400")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var charged float64
	turns := 0
	for _, l := range r.lines(t) {
		for _, turn := range l.Get("turns").Array() {
			charged += turn.Get("usage.cost").Float()
			turns++
		}
	}
	if turns == 0 || charged == 0 {
		t.Fatalf("no turn charged anything: %s", r.stdout)
	}
	m := summaryUSD.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no dollar figure in the summary: %s", r.stderr)
	}
	if reported, _ := strconv.ParseFloat(m[1], 64); math.Abs(reported-charged) > 0.00005 {
		t.Errorf("generate reports $%s; the %d turns written were charged $%.6f", m[1], turns, charged)
	}
	if charged > limit {
		t.Errorf("the turns written were charged $%.4f, past the budget of $%.2f", charged, limit)
	}
}
