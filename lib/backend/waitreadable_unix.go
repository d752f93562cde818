//go:build unix

package backend

import (
	"net"
	"syscall"
)

// waitReadable returns when conn has bytes to read (or its read side
// ended, or it failed), without a buffer to read them into: thousands of
// requests wait for their answers at once, and each would otherwise hold
// one. A connection that cannot be polled that way returns at once, and
// its read waits in the buffer instead.
func waitReadable(conn net.Conn) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw.Read(readable)
}

// readable peeks at fd without waiting: "would block" has the poller wait
// for the socket to become readable; anything else (bytes, the end of the
// stream, an error) is for the read to see. It captures nothing, so that
// waiting allocates nothing, and its byte stays on the stack.
func readable(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN
}
