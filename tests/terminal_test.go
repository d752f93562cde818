package tests

// generate's live progress bar as a person sees it: the real binary with its
// stderr on a pseudo-terminal of a given size, the bytes it wrote played
// onto a screen the way a terminal (tmux, script) would.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/synthpipe/synthpipe/lib/sim"
	"github.com/synthpipe/synthpipe/lib/simtest"
)

// ptyCapture collects what a program writes to a pseudo-terminal and wakes
// whoever waits for a string to appear.
type ptyCapture struct {
	mu    sync.Mutex
	raw   bytes.Buffer
	grew  chan struct{} // closed and replaced on every read
	ended chan struct{} // the terminal side is closed: nothing more comes
}

func capturePTY(ptmx *os.File) *ptyCapture {
	c := &ptyCapture{grew: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			c.mu.Lock()
			c.raw.Write(buf[:n])
			close(c.grew)
			c.grew = make(chan struct{})
			c.mu.Unlock()
			if err != nil { // EIO once every terminal side is closed
				return
			}
		}
	}()
	return c
}

// waitFor waits until the output holds s; it fails the test after limit, a
// bound on a hang, not a measure of speed.
func (c *ptyCapture) waitFor(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		c.mu.Lock()
		found, grew := bytes.Contains(c.raw.Bytes(), []byte(s)), c.grew
		c.mu.Unlock()
		if found {
			return
		}
		select {
		case <-grew:
		case <-c.ended:
			t.Fatalf("the terminal closed without %q:\n%q", s, c.bytes())
		case <-deadline:
			t.Fatalf("no %q on the terminal after %v:\n%q", s, limit, c.bytes())
		}
	}
}

func (c *ptyCapture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.raw.Bytes())
}

// playScreen plays terminal output onto a screen cols wide: "\r" returns to
// the line's start, "\n" starts a new line, ESC [ K erases to the end of the
// line, other escapes (colours) take no columns, and a line that reaches
// the last column wraps as a terminal wraps it. It returns the screen's
// lines (a wrapped line as one) and every frame of the live bar as it was drawn (the text from the
// line's start to the erase after it).
func playScreen(raw []byte, cols int) (lines, frames []string) {
	var cur []rune
	var wrapped []string // the rows a long line filled before cur
	col := 0
	put := func(r rune) {
		if col >= cols { // the terminal wraps: the line goes on below
			wrapped = append(wrapped, string(cur))
			cur, col = nil, 0
		}
		if col < len(cur) {
			cur[col] = r
		} else {
			cur = append(cur, r)
		}
		col++
	}
	s := string(raw)
	frameStart := -1
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\r':
			col = 0
			frameStart = i + 1
		case ch == '\n':
			lines = append(lines, strings.Join(wrapped, "")+string(cur))
			cur, wrapped, col, frameStart = nil, nil, 0, i+1
		case ch == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j < len(s) && s[j] == 'K' {
				if frameStart >= 0 && frameStart < i {
					frames = append(frames, s[frameStart:i])
				}
				cur = cur[:min(col, len(cur))]
			}
			i = j
		default:
			r := []rune(s[i:])[0]
			i += len(string(r)) - 1
			put(r)
		}
	}
	if len(cur)+len(wrapped) > 0 {
		lines = append(lines, strings.Join(wrapped, "")+string(cur))
	}
	return lines, frames
}

// barFrame is one frame of the bar: its bar, percentage and counts.
var barFrame = regexp.MustCompile(`^\[([#.]+)\]  (\d+)% ([\d,]+)/([\d,]+) `)

func TestGenerateTerminalView(t *testing.T) {
	t.Parallel()
	requireTools(t, "generate")
	const records, cols = 200, 120
	cfg := sim.Default()
	cfg.Lengths = sim.LengthDist{Kind: sim.LengthFixed, Fixed: 100}
	cfg.StepTime = 10 * time.Millisecond // a run of a few bars
	srv := simtest.Start(t, cfg)
	dir := t.TempDir()

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Cols: cols, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	stdin, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("generate", "--url", srv.URL, "--max-tokens", "128", "--total", strconv.Itoa(records))
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=1", "COLUMNS=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	tty.Close() // the child holds the terminal side now
	screen := capturePTY(ptmx)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill() // a test that failed early leaves no process behind

	// The bar is up before the first record is read; the first record then
	// makes generate log how it sized the server's concurrency, a line
	// printed while the bar is on screen.
	screen.waitFor(t, "in flight", time.Minute)
	var in bytes.Buffer
	for i := range records {
		fmt.Fprintf(&in, `{"id":"r%d","input_ids":[%d,%d,%d]}`+"\n", i, 10+i, 20+i, 30+i)
	}
	if _, err := feed.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	feed.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("generate: %v\n%q", err, screen.bytes())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("generate still runs after 2 minutes:\n%q", screen.bytes())
	}
	<-screen.ended
	raw := screen.bytes()
	lines, frames := playScreen(raw, cols)
	t.Logf("the screen:\n%s\nthe bar's frames:\n%s", strings.Join(lines, "\n"), strings.Join(frames, "\n"))

	// Every line is a log line or the bar, never both.
	var sizing, summary bool
	for i, l := range lines {
		switch {
		case l == "":
		case strings.HasPrefix(l, "generate: "):
			if strings.Count(l, "generate:") > 1 || strings.Contains(l, " in flight |") {
				t.Errorf("line %d holds more than one line: %q", i, l)
			}
			sizing = sizing || strings.Contains(l, ": concurrency ")
			summary = summary || strings.Contains(l, "records read")
		case barFrame.MatchString(l):
			if strings.Contains(l, "generate:") {
				t.Errorf("line %d: a log line glued onto the bar: %q", i, l)
			}
		default:
			t.Errorf("line %d is neither a log line nor the bar: %q", i, l)
		}
	}
	if !sizing || !summary {
		t.Errorf("the concurrency line (%v) and the summary (%v) must each stand on a line of their own", sizing, summary)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "records read") {
		t.Errorf("the last line is %q, want the summary: the bar is cleared before it", last)
	}

	// Each frame fits the line and gives the bar a fifth of it; the
	// percentage and the bar round down, so 100% means every record.
	barWidth := (cols - 1) / 5
	shown := 0
	for _, f := range frames {
		if n := len([]rune(f)); n > cols-1 {
			t.Errorf("a frame of %d columns on a %d-column terminal: %q", n, cols, f)
		}
		m := barFrame.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("a frame without its bar at %d columns: %q", cols, f)
			continue
		}
		shown++
		pct, _ := strconv.Atoi(m[2])
		done, _ := strconv.Atoi(strings.ReplaceAll(m[3], ",", ""))
		total, _ := strconv.Atoi(strings.ReplaceAll(m[4], ",", ""))
		if total != records || len(m[1]) != barWidth {
			t.Errorf("frame %q: a bar of %d columns for %d records, want %d for %d", f, len(m[1]), total, barWidth, records)
		}
		if pct != 100*done/total || strings.Count(m[1], "#") != done*barWidth/total {
			t.Errorf("frame %q: %d%% and %d of %d columns filled for %d of %d", f, pct, strings.Count(m[1], "#"), barWidth, done, total)
		}
	}
	if shown == 0 {
		t.Fatalf("no frame of the bar in:\n%q", raw)
	}
	// The first frame is drawn before any answer: no ETA yet, but a
	// place for it.
	if !strings.HasSuffix(frames[0], "| ETA ...") {
		t.Errorf("the first frame, before any answer, is %q: want \"ETA ...\" and no figure", frames[0])
	}
	if err := out.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(out.Name())
	if n := bytes.Count(written, []byte("\n")); n != records {
		t.Errorf("%d answers written, want %d", n, records)
	}
}
