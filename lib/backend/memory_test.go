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
// answers every request with a stream that sends one keep-alive comment
// and waits until stdin closes.
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
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
		w.(http.Flusher).Flush()
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
	child := exec.Command(os.Args[0], "-test.run=^TestMemoryServerProcess$")
	child.Env = append(os.Environ(), memoryServerEnv+"=1")
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer stdin.Close()
	lines := bufio.NewReader(stdout)
	addr, err := lines.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + strings.TrimSpace(addr)

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
	for range n {
		if _, err := lines.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
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
