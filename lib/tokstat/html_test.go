package tokstat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// htmlAnswers are generate's answers under max_tokens 64: one cut at it,
// one empty, one error.
const htmlAnswers = `{"id":"a1","dataset":"chat","prompt_tokens":10,"completion_tokens":12,"finish_reason":"stop","text":"x","gen":{"params":{"max_tokens":64}}}
{"id":"a2","dataset":"chat","prompt_tokens":10,"completion_tokens":40,"finish_reason":"stop","text":"x","gen":{"params":{"max_tokens":64}}}
{"id":"a3","dataset":"chat","prompt_tokens":10,"completion_tokens":64,"finish_reason":"length","text":"x","gen":{"params":{"max_tokens":64}}}
{"id":"a4","dataset":"chat","prompt_tokens":10,"completion_tokens":0,"finish_reason":"stop","text":"","gen":{"params":{"max_tokens":64}}}
{"id":"a5","dataset":"chat","prompt_tokens":10,"error":{"kind":"http","status":400,"message":"too long"}}
{"id":"a6","dataset":"chat","prompt_tokens":10,"completion_tokens":5,"finish_reason":"stop","reasoning":"r","text":"ok </think> then","gen":{"params":{"max_tokens":64}}}
`

// htmlConversations are generate --turns all's conversations.
const htmlConversations = `{"id":"c1","prompt_tokens":30,"completion_tokens":50,"ended":"done","turns":[{"prompt_tokens":10,"completion_tokens":20,"finish_reason":"tool_calls"},{"prompt_tokens":20,"completion_tokens":30,"finish_reason":"stop"}],"gen":{"params":{"max_tokens":32}}}
{"id":"c2","prompt_tokens":10,"completion_tokens":32,"ended":"length","turns":[{"prompt_tokens":10,"completion_tokens":32,"finish_reason":"length"}],"gen":{"params":{"max_tokens":32}}}
`

func writeInputs(t *testing.T) (answers, conversations string) {
	t.Helper()
	dir := t.TempDir()
	answers, conversations = filepath.Join(dir, "answers.jsonl"), filepath.Join(dir, "conversations.jsonl")
	for name, text := range map[string]string{answers: htmlAnswers, conversations: htmlConversations} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return answers, conversations
}

func runTokstat(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"tokstat"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("tokstat %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// TestHTMLReport: the page holds every chart of every dataset, max_tokens
// marked, the soft failures named, and turns for the conversations; it
// fetches nothing.
func TestHTMLReport(t *testing.T) {
	answers, conversations := writeInputs(t)
	page := runTokstat(t, "--html", "--budget", "1k", answers, conversations)
	charts := regexp.MustCompile(`data-chart="([a-z]+)"`).FindAllStringSubmatch(page, -1)
	var kinds []string
	for _, c := range charts {
		kinds = append(kinds, c[1])
	}
	want := "[mix histogram finish budget soft histogram finish budget soft turns ended]"
	if fmt.Sprint(kinds) != want {
		t.Errorf("charts %v, want %s", kinds, want)
	}
	for _, s := range []string{"max_tokens 64", "max_tokens 32", "truncated (length)", ">empty<", ">marker leak<", "errors", "turn truncated (length)",
		"1 turn", "2 turns", ">done<", "of a budget of 1,000"} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if n := strings.Count(page, `class="limit"`); n != 2 {
		t.Errorf("%d max_tokens lines, want 2 (one per dataset)", n)
	}
	checkSelfContained(t, page)
}

// checkSelfContained fails on anything that would make the page fetch:
// links, sources, imports, urls other than the SVG namespace.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"src=", "href=", "@import", "url(", "<link", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers outside itself: %q", bad)
		}
	}
	if n, ns := strings.Count(page, "http"), strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`); n != ns {
		t.Errorf("the page names %d URLs besides the SVG namespace", n-ns)
	}
}

// TestHTMLInBrowser: Debian's chromium, headless, loads the report of
// record files and of a job folder from file://; every chart is drawn with
// a size (the page's check writes it into the DOM) and the console stays
// silent.
func TestHTMLInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: scripts/ensure-test-deps.sh installs Debian's package chromium (make test runs it)")
	}
	answers, conversations := writeInputs(t)
	job := t.TempDir()
	for name, src := range map[string]string{"chat": answers, "agent": conversations} {
		data, _ := os.ReadFile(src)
		os.MkdirAll(filepath.Join(job, name), 0o755)
		os.WriteFile(filepath.Join(job, name, "out.jsonl"), data, 0o644)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		charts int
	}{
		{"files", []string{"--html", answers, conversations}, 11},
		{"job", []string{"--html", job}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(page, []byte(runTokstat(t, tc.args...)), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, console := loadInBrowser(t, browser, page)
			figures := regexp.MustCompile(`<figure class="chart" data-chart="([a-z]+)" data-rendered="(\d+)x(\d+)"`).FindAllStringSubmatch(dom, -1)
			if len(figures) != tc.charts || strings.Count(dom, `<figure class="chart"`) != tc.charts {
				t.Fatalf("%d charts drawn of %d, want %d:\n%s", len(figures), strings.Count(dom, `<figure class="chart"`), tc.charts, dom)
			}
			for _, f := range figures {
				if f[2] == "0" || f[3] == "0" {
					t.Errorf("chart %s drawn at %sx%s", f[1], f[2], f[3])
				}
			}
			if console != "" {
				t.Errorf("console messages:\n%s", console)
			}
		})
	}
}

// loadInBrowser loads page in headless chromium and returns the DOM after
// the page's scripts ran, and the console's lines.
func loadInBrowser(t *testing.T, browser, page string) (dom, console string) {
	t.Helper()
	// A bound on a hang, not a measure of speed: a loaded machine starts
	// chromium in seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			lines = append(lines, l)
		}
	}
	return stdout.String(), strings.Join(lines, "\n")
}
