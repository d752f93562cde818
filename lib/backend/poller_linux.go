//go:build linux

package backend

import (
	"net"
	"sync"
	"syscall"

	"github.com/synthpipe/synthpipe/lib/runpool"
)

// poller waits for the connections of all the calls awaiting their
// answers at once, in one epoll set and on one goroutine, and runs each
// call's function on a goroutine of runpool's once its answer begins: a
// request in flight then holds no goroutine while it waits (a goroutine's
// descriptor and its smallest stack are 2.5 KiB, most of what a request in
// flight held). Go's own poller cannot be asked to run a function when a
// socket becomes readable, only to wake a goroutine parked on it.
type poller struct {
	epfd  int
	mu    sync.Mutex
	next  uint64               // the token of the next wait (never reused)
	waits map[uint64]*pollWait // the waits in the epoll set, by token
}

// pollWait is one call awaiting its answer. Its state changes under the
// poller's lock: new, then registered (in the epoll set), then done (its
// function has been started, once).
type pollWait struct {
	p     *poller
	token uint64
	fd    int
	conn  net.Conn
	ready *bool // set before then runs: true when conn has bytes to read
	then  func()
	state int
}

const (
	waitNew = iota
	waitRegistered
	waitDone
)

// sharedPoller is started on first use; nil when epoll is not available
// (the calls then wait on goroutines of their own).
var sharedPoller = sync.OnceValue(func() *poller {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	p := &poller{epfd: epfd, waits: map[uint64]*pollWait{}}
	go p.run()
	return p
})

// newWait makes w the wait of conn, whose descriptor is fd (-1: not
// known), which start puts in the epoll set: then runs once, with *ready
// true when conn has bytes to read (or ended, or failed), false when the
// wait is closed first (which closes conn). false when conn cannot be
// watched here. w is the caller's, and then a function it has already,
// so that a wait allocates nothing of its own.
func (p *poller) newWait(w *pollWait, conn net.Conn, fd int, ready *bool, then func()) bool {
	if fd < 0 {
		if fd = connFD(conn); fd < 0 {
			return false
		}
	}
	// The descriptor stays conn's while the wait is registered: conn is
	// closed only by Close, once the wait has left the set. A given fd
	// may be that of a conn closed since (its request was cancelled
	// before the wait took over the watch): the wait is then closed
	// before it starts (exchange.watch), and fd never enters the set.
	*w = pollWait{p: p, conn: conn, fd: fd, ready: ready, then: then}
	return true
}

// connFD is conn's descriptor, -1 when it has none to poll. It is the
// same for the connection's life, which the transport keeps it for:
// asking for it allocates.
func connFD(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if raw.Control(func(d uintptr) { fd = int(d) }) != nil {
		return -1
	}
	return fd
}

// start puts w in the epoll set, unless it was closed already; when the
// set refuses it, w's function runs now (ready: the read will see why).
func (w *pollWait) start() {
	p := w.p
	p.mu.Lock()
	if w.state != waitNew {
		p.mu.Unlock()
		return
	}
	p.next++
	w.token = p.next
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollOneShot, Fd: int32(w.token), Pad: int32(w.token >> 32)}
	// A pooled connection is still in the set, disarmed, from its last
	// wait (see finish): re-arming it is one call where taking it out and
	// adding it again were two. A new one is added.
	err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, w.fd, &ev)
	if err == syscall.ENOENT {
		err = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, w.fd, &ev)
	}
	if err == nil {
		w.state = waitRegistered
		p.waits[w.token] = w
	} else {
		w.state = waitDone
	}
	p.mu.Unlock()
	if err != nil {
		w.fire(true)
	}
}

// fire runs w's function on a goroutine of runpool, once w is done.
func (w *pollWait) fire(ready bool) {
	*w.ready = ready
	runpool.Go(w.then)
}

// epollOneShot: an event disarms the descriptor until it is re-armed.
const epollOneShot = 1 << 30

// Close closes the connection and, when the wait had not fired yet, runs
// its function (not ready): the request was cancelled or timed out while
// it waited.
func (w *pollWait) Close() error {
	p := w.p
	p.mu.Lock()
	fire := w.state != waitDone
	if w.state == waitRegistered {
		// Armed: it leaves the set before anyone may close the
		// descriptor, so that a number reused by a later connection is
		// never removed in its place.
		syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	}
	p.finish(w)
	p.mu.Unlock()
	err := w.conn.Close()
	if fire {
		w.fire(false)
	}
	return err
}

// finish marks w done, under p.mu. Its descriptor, once its event fired,
// stays in the epoll set, disarmed (one-shot), until its connection waits
// again (start re-arms it) or is closed, which takes it out of the set:
// nothing can fire for it meanwhile, and no call names it after its close.
func (p *poller) finish(w *pollWait) {
	if w.state == waitRegistered {
		delete(p.waits, w.token)
	}
	w.state = waitDone
}

// run fires the waits whose connections became readable.
func (p *poller) run() {
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			continue // EINTR
		}
		for _, ev := range events[:n] {
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			p.mu.Lock()
			w := p.waits[token] // nil: closed meanwhile
			if w != nil {
				p.finish(w)
			}
			p.mu.Unlock()
			if w != nil {
				w.fire(true)
			}
		}
	}
}
