package backend

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

// memoryServerEnv makes the test binary serve streams that never end, in
// a child process, so that the memory test measures the client alone.
const memoryServerEnv = "SYNTHPIPE_BACKEND_MEMORY_SERVER"

// TestMemoryServerProcess is the child: it prints its address, then
// answers every request for a stream with one keep-alive comment, and
// every other request with nothing, and waits until stdin closes.
func TestMemoryServerProcess(t *testing.T) {
	if os.Getenv(memoryServerEnv) != "1" {
		t.Skip("runs only as the child of TestMemoryPerStreamInFlight")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(quit)
	}()
	fmt.Println(l.Addr().String())
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
			w.(http.Flusher).Flush()
		}
		fmt.Println("open")
		select {
		case <-quit:
		case <-r.Context().Done():
		}
	}))
	<-quit
}

// TestMemoryPerStreamInFlight measures what one stream waiting for its
// tokens costs the client: heap and goroutine stacks (the caller's
// goroutine included), with the server in another process.
func TestMemoryPerStreamInFlight(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 2000 connections; the race detector's shadow memory would be measured too")
	}
	const n = 2000
	url, opened := memoryServer(t)
	b := NewOpenAI(Options{Stream: true, IdleTimeout: time.Minute, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := chatReq()
	before := inUse()
	var done sync.WaitGroup
	for range n {
		done.Go(func() { b.Do(ctx, url, req) })
	}
	// Wait until the server has sent every stream its first bytes, then
	// a little for the clients to read them and settle.
	opened(n)
	time.Sleep(200 * time.Millisecond)
	after := inUse()
	heap := (int64(after.HeapInuse) - int64(before.HeapInuse)) / n
	stack := (int64(after.StackInuse) - int64(before.StackInuse)) / n
	if path := os.Getenv("SYNTHPIPE_BACKEND_MEMORY_PROFILE"); path != "" {
		writeHeapProfile(t, path)
	}
	t.Logf("%d streams in flight: %d bytes of heap and %d of goroutine stacks each", n, heap, stack)
	// The acceptance bound for the whole client is 20 KiB per request in
	// flight; the backend's part must fit well inside it.
	if heap+stack > 20<<10 {
		t.Errorf("a stream in flight costs %d bytes, more than 20 KiB", heap+stack)
	}
	cancel()
	done.Wait()
}

// TestMemoryPerCallAwaitingItsAnswer measures what a request that waits
// for its whole answer costs the client when it is sent by Start and
// awaited by OnAnswer: no goroutine of the caller's waits for it, and the
// poller waits for them all (elsewhere than Linux, a goroutine with the
// smallest stack waits for each).
func TestMemoryPerCallAwaitingItsAnswer(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 2000 connections; the race detector's shadow memory would be measured too")
	}
	const n = 2000
	url, opened := memoryServer(t)
	b := NewSGLang(Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	req := &Request{ID: "rec-1", Attempt: 1, InputIDs: []int{1, 2, 3, 4}, Params: Params{MaxTokens: 16}}
	before := inUse()
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		call := b.Start(ctx, url, req)
		call.OnAnswer(func() {
			call.Result()
			done.Done()
		})
	}
	opened(n)
	after := inUse()
	heap := (int64(after.HeapInuse) - int64(before.HeapInuse)) / n
	stack := (int64(after.StackInuse) - int64(before.StackInuse)) / n
	if path := os.Getenv("SYNTHPIPE_BACKEND_MEMORY_PROFILE"); path != "" {
		writeHeapProfile(t, path)
	}
	t.Logf("%d calls awaiting their answers: %d bytes of heap and %d of goroutine stacks each", n, heap, stack)
	// A goroutine blocked in Do would hold 4 KiB of stack; one waiting
	// for each call, 2 KiB (a few would have grown, in a GC assist).
	if stack > 3<<10 {
		t.Errorf("a call awaiting its answer holds %d bytes of goroutine stack, not the smallest stack (2 KiB)", stack)
	}
	if heap+stack > 4<<10 && sharedPoller() != nil {
		t.Errorf("a call awaiting its answer costs %d bytes, more than 4 KiB", heap+stack)
	}
	cancel()
	done.Wait()
}

// memoryServer starts the child server (TestMemoryServerProcess) and
// returns its URL and a function that returns once it has received n more
// requests.
func memoryServer(t *testing.T) (url string, opened func(n int)) {
	child := exec.Command(os.Args[0], "-test.run=^TestMemoryServerProcess$")
	child.Env = append(os.Environ(), memoryServerEnv+"=1")
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		child.Wait()
	})
	lines := bufio.NewReader(stdout)
	addr, err := lines.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + strings.TrimSpace(addr), func(n int) {
		for range n {
			if _, err := lines.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func inUse() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// writeHeapProfile saves where the live heap was allocated, to see what a
// stream in flight is made of (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}
