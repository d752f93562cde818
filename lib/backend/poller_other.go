//go:build !linux

package backend

import "net"

// poller is Linux's epoll (see poller_linux.go); elsewhere each call
// awaits its answer on a goroutine of its own.
type poller struct{}

type pollWait struct{}

func sharedPoller() *poller { return nil }

func (p *poller) newWait(*pollWait, net.Conn, int, *bool, func()) bool { return false }

func connFD(net.Conn) int { return -1 }

func (w *pollWait) start() {}

func (w *pollWait) Close() error { return nil }
