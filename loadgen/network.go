package main

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// The real network: one thread, non-blocking sockets and one epoll set, as wrk does it. Each
// connection writes its request as prepared bytes and feeds what it reads to its response
// reader (http1.go); a timerfd in the same epoll set wakes the thread when the next arrival is
// due, so one epoll_wait serves both the schedule and the sockets. No goroutine, channel or
// allocation per request: on one core a goroutine per connection spent as much time being
// scheduled and re-arming timers as sending. The thread's own system calls leave Go's scheduler
// out (sys.go).

type connState uint8

const (
	connIdle connState = iota
	connConnecting
	connWriting
	connReading
	connClosed
)

const readBuffer = 4 << 10

// behind is how late the engine must be before an arrival that finds no idle connection
// waits for one instead of opening another: the engine, not the target, is then what is slow,
// and opening connections would only slow it further (its lag records the wait). The waiting
// ones get the next connection that comes free, or new ones as soon as the engine has time to
// spare again.
const behind = time.Millisecond

// openPerPass is how many connections the waiting arrivals may open in one look at the
// sockets once the engine has time to spare.
const openPerPass = 8

// maxConnecting is how many new connections may wait at once for their first response: beyond
// it an arrival waits for the first connection that is free. A connection is new until the
// target has answered on it, not only until the kernel has connected it: on loopback the kernel
// completes every handshake while the target has not accepted the connection yet, so during a
// stall of a few milliseconds every arrival would open one, and a server that accepts a
// connection per turn of its event loop (nginx) would then spend seconds accepting thousands
// while their requests time out. The wait is the target's, not the engine's: the arrival keeps
// the lag it had when the engine took it up, and its latency counts from its due time.
const maxConnecting = 64

// netConn is one connection and the request it carries.
type netConn struct {
	fd      int
	pool    *pool
	state   connState
	a       arrival
	x       exchange
	req     []byte
	body    []byte
	written int
	in      []byte
	r, w    int
	resp    response
	served  int // responses read on it
	sentAt  time.Duration
	fresh   bool // no response on it yet (counted in opening)
	outs    bool // epoll reports room to write (while connecting, or a write that must wait)
	unsent  bool // answered before its whole request was sent: never reused
}

// pool is the connections to one address (a target).
type pool struct {
	sa   syscall.Sockaddr
	af   int
	idle []*netConn
	err  error // the address could not be resolved
}

type epollNet struct {
	e        *engine
	clk      clock
	newConns bool
	epfd     int
	timerfd  int
	armed    time.Duration // when the timer is set to expire (-1: not armed)
	pools    map[string]*pool
	byFD     []*netConn       // the open connections, by descriptor
	nOpen    int              // how many
	opening  int              // how many are new: no response on them yet
	inFlight int              // requests sent and not finished, and arrivals waiting for a connection
	pending  []pendingArrival // waiting for a connection, from head on
	head     int
	behind   int // how many of them wait for the engine (not held)
	events   [256]syscall.EpollEvent
	lastScan time.Duration
}

// pendingArrival waits for a connection: the engine is behind, or the target has not yet
// answered on the new connections it was given (held).
type pendingArrival struct {
	a    arrival
	pool *pool
	held bool
	lag  time.Duration // held: when the engine took it up
}

func newEpollNet(e *engine, clk clock, newConns bool) (*epollNet, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	tfd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil, errno
	}
	n := &epollNet{
		e: e, clk: clk, newConns: newConns, epfd: epfd, timerfd: int(tfd), armed: -1,
		pools: map[string]*pool{},
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | epollET, Fd: int32(tfd)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, int(tfd), &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(int(tfd))
		return nil, err
	}
	return n, nil
}

const (
	clockMonotonic = 1
	epollET        = 1 << 31 // the timer's event: reported on each expiry, never read
)

func (n *epollNet) busy() int        { return n.inFlight }
func (n *epollNet) connections() int { return n.nOpen }

func (n *epollNet) poolFor(address string) *pool {
	if p, ok := n.pools[address]; ok {
		return p
	}
	p := &pool{}
	addr, err := net.ResolveTCPAddr("tcp", address)
	switch {
	case err != nil:
		p.err = err
	case addr.IP.To4() != nil:
		sa := &syscall.SockaddrInet4{Port: addr.Port}
		copy(sa.Addr[:], addr.IP.To4())
		p.sa, p.af = sa, syscall.AF_INET
	default:
		sa := &syscall.SockaddrInet6{Port: addr.Port}
		copy(sa.Addr[:], addr.IP.To16())
		p.sa, p.af = sa, syscall.AF_INET6
	}
	n.pools[address] = p
	return p
}

// send begins the arrival's request: on an idle connection to its target, else on a new one,
// unless the engine is behind (then it waits for a connection to come free).
func (n *epollNet) send(a arrival, now time.Duration) {
	p := n.poolFor(a.phase.build.address)
	n.inFlight++
	if c := n.idle(p); c != nil {
		n.begin(c, a, exchange{lag: now - a.due}, now)
		return
	}
	if lag := now - a.due; !n.newConns && n.nOpen > 0 && (lag > behind || n.opening >= maxConnecting) {
		held := n.opening >= maxConnecting
		if !held {
			n.behind++
		}
		n.pending = append(n.pending, pendingArrival{a: a, pool: p, held: held, lag: lag})
		return
	}
	n.open(p, a, exchange{lag: now - a.due}, now)
}

// idle is an idle connection of the pool (nil: none, or connections are not kept).
func (n *epollNet) idle(p *pool) *netConn {
	if n.newConns {
		return nil
	}
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if c.state == connIdle {
			return c
		}
	}
	return nil
}

// unqueue sends the arrivals waiting for a connection, oldest first, while it can: on the idle
// ones, on at most opens new ones (the engine is on time again: a few at a time, never a
// burst); one later than its timeout is dropped, or, held for the target, a timeout of the
// target's.
func (n *epollNet) unqueue(now time.Duration, opens int) {
	for n.head < len(n.pending) {
		w := n.pending[n.head]
		lag := now - w.a.due
		if w.held {
			lag = w.lag
		}
		if now-w.a.due > w.a.phase.timeout {
			if w.held {
				n.finish(w.a, exchange{lag: lag, err: errTimeout})
			} else {
				n.inFlight--
				n.e.dropped(w.a, lag)
			}
		} else if c := n.idle(w.pool); c != nil {
			n.begin(c, w.a, exchange{lag: lag}, now)
		} else if opens > 0 && n.opening < maxConnecting || n.nOpen == 0 {
			opens--
			n.open(w.pool, w.a, exchange{lag: lag}, now)
		} else {
			if n.opening >= maxConnecting {
				n.hold(now)
			}
			return
		}
		if !w.held {
			n.behind--
		}
		n.pending[n.head] = pendingArrival{}
		n.head++
		if n.head == len(n.pending) {
			n.pending, n.head = n.pending[:0], 0
		}
	}
}

// hold marks every arrival that waits for the engine as held: from now on they wait for the
// target, which has not answered on the connections it was given yet.
func (n *epollNet) hold(now time.Duration) {
	for i := n.head; n.behind > 0 && i < len(n.pending); i++ {
		if w := &n.pending[i]; !w.held {
			w.held, w.lag = true, now-w.a.due
			n.behind--
		}
	}
}

// open opens a connection for the arrival, written once connected (nil: it failed at once,
// and the arrival is finished).
func (n *epollNet) open(p *pool, a arrival, x exchange, now time.Duration) *netConn {
	x.opened = true
	if p.err != nil {
		x.err = p.err
		n.finish(a, x)
		return nil
	}
	fd, err := syscall.Socket(p.af, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err == nil {
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if err = syscall.Connect(fd, p.sa); err == syscall.EINPROGRESS {
			err = nil
		}
		if err == nil {
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP, Fd: int32(fd)}
			err = syscall.EpollCtl(n.epfd, syscall.EPOLL_CTL_ADD, fd, &ev)
		}
		if err != nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		x.err, x.refused = err, systemRefused(err)
		n.finish(a, x)
		return nil
	}
	c := &netConn{fd: fd, pool: p, in: make([]byte, readBuffer), outs: true}
	for len(n.byFD) <= fd {
		n.byFD = append(n.byFD, nil)
	}
	n.byFD[fd] = c
	n.nOpen++
	c.a, c.x, c.sentAt = a, x, now
	c.build()
	c.state = connConnecting
	c.fresh = true
	n.opening++
	return c
}

// begin writes the arrival's request on a connection that is open.
func (n *epollNet) begin(c *netConn, a arrival, x exchange, now time.Duration) {
	c.a, c.x, c.sentAt, c.unsent = a, x, now, false
	c.build()
	n.write(c)
}

func (c *netConn) build() {
	b := c.a.phase.build
	c.req = b.request(c.req, c.body, c.a.k)
	if b.static == nil && cap(c.body) < len(c.req) {
		c.body = make([]byte, 0, len(c.req)) // the next body's scratch, grown once
	}
	c.written = 0
	if b.answers == nil {
		c.resp.sum = nil
	} else {
		if c.resp.sum == nil {
			c.resp.sum = &bodyHash{}
		}
		c.resp.sum.keep = b.answers.body
	}
	c.resp.reset(b.isHead)
}

// watch sets what epoll reports for a connection: reads, and room to write when asked.
func (n *epollNet) watch(c *netConn, writes bool) error {
	events := uint32(syscall.EPOLLIN | syscall.EPOLLRDHUP)
	if writes {
		events |= syscall.EPOLLOUT
	}
	ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(n.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		return err
	}
	c.outs = writes
	return nil
}

// write sends what is left of the request; the rest goes when the socket takes it.
func (n *epollNet) write(c *netConn) {
	c.state = connWriting
	for c.written < len(c.req) {
		w, err := write(c.fd, c.req[c.written:])
		if err == syscall.EAGAIN {
			if !c.outs {
				if err := n.watch(c, true); err != nil {
					n.broken(c, err)
					return
				}
			}
			return
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			n.broken(c, err)
			return
		}
		c.written += w
	}
	if c.outs {
		if err := n.watch(c, false); err != nil {
			n.broken(c, err)
			return
		}
	}
	c.state = connReading
}

// connected is a connection whose connect ended: on to its request, or its failure. From
// now on only its reads are watched (the request is small: a write that cannot finish at once
// watches for room again).
func (n *epollNet) connected(c *netConn) {
	c.state = connWriting
	errno, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err == nil && errno != 0 {
		err = syscall.Errno(errno)
	}
	if err != nil {
		a, x := c.a, c.x
		x.err, x.refused = err, systemRefused(err)
		n.drop(c)
		n.finish(a, x)
		return
	}
	n.write(c)
}

// readable reads what the socket has and feeds the response in progress (epoll says so again
// while more is there).
func (n *epollNet) readable(c *netConn) {
	for c.state != connClosed {
		if c.r == c.w {
			c.r, c.w = 0, 0
		} else if c.w == len(c.in) {
			if c.r > 0 {
				c.w = copy(c.in, c.in[c.r:c.w])
				c.r = 0
			} else {
				bigger := make([]byte, 2*len(c.in))
				copy(bigger, c.in[:c.w])
				c.in = bigger
			}
		}
		got, err := read(c.fd, c.in[c.w:])
		switch {
		case err == syscall.EAGAIN:
			return
		case err == syscall.EINTR:
			continue
		case err != nil:
			n.broken(c, err)
			return
		case got == 0:
			n.ended(c)
			return
		}
		c.w += got
		if c.state == connWriting {
			// the target answered before the whole request was sent (a large upload refused:
			// 413, 401, 405): stop sending and read the answer; the connection is closed after
			// it, since the rest of the request was never sent
			c.unsent = true
			if c.outs {
				if err := n.watch(c, false); err != nil {
					n.broken(c, err)
					return
				}
			}
			c.state = connReading
		}
		if c.state != connReading {
			// bytes nobody asked for (an idle connection): it cannot be trusted with a request
			n.drop(c)
			return
		}
		used, done, perr := c.resp.feed(c.in[c.r:c.w])
		c.r += used
		if perr != nil {
			n.fail(c, perr)
			return
		}
		if done {
			n.complete(c)
		}
		if c.w < len(c.in) {
			return // the read did not fill the buffer: nothing more is waiting
		}
	}
}

// ended is the server closing the connection.
func (n *epollNet) ended(c *netConn) {
	if c.state == connWriting {
		n.broken(c, errUnsent) // closed before the whole request was sent, unanswered
		return
	}
	if c.state != connReading {
		n.drop(c) // an idle connection the server closed
		return
	}
	if done, err := c.resp.closed(); done {
		n.complete(c)
	} else {
		n.broken(c, err)
	}
}

// broken is a connection that failed during a request: the request fails, whatever its method
// and whether the connection was new or kept alive (docs/engine.md, "A connection closed without
// a response"). A target that closes or resets a kept-alive connection on a request without
// answering it has failed that request: sending it again on a new connection (as Go's client
// does for a GET) would hide the failure, and a gateway that drops connections would score as
// one that never fails.
func (n *epollNet) broken(c *netConn, err error) {
	if c.state == connIdle {
		n.drop(c)
		return
	}
	n.fail(c, err)
}

func (n *epollNet) complete(c *netConn) {
	a, x := c.a, c.x
	x.status = c.resp.status
	if b := a.phase.build; b.answers != nil {
		ok, _ := b.verdict(x.status)
		r := &c.resp
		x.wrong = b.answers.verdict(c.req, x.status, ok, r.answer[:r.answerLen], r.sum)
	}
	c.served++
	if c.fresh {
		c.fresh = false
		n.opening--
	}
	if c.resp.keepAlive && !n.newConns && c.r == c.w && !c.unsent {
		c.state = connIdle
		c.pool.idle = append(c.pool.idle, c)
	} else {
		n.drop(c)
	}
	n.finish(a, x)
	if n.head < len(n.pending) {
		n.unqueue(n.clk.now(), 0)
	}
}

func (n *epollNet) fail(c *netConn, err error) {
	a, x := c.a, c.x
	x.err = err
	n.drop(c)
	n.finish(a, x)
}

// finish ends an arrival's request and hands its outcome to the engine.
func (n *epollNet) finish(a arrival, x exchange) {
	n.inFlight--
	x.end = n.clk.now()
	n.e.done(&a, x)
}

// drop closes a connection (a request on it is the caller's to finish).
func (n *epollNet) drop(c *netConn) {
	if c.state == connClosed {
		return
	}
	if c.fresh {
		c.fresh = false
		n.opening--
	}
	c.state = connClosed
	n.byFD[c.fd] = nil
	n.nOpen--
	syscall.Close(c.fd)
}

// wait serves the sockets until the clock reaches until: at least one look at them, even when
// until has passed (an engine behind its schedule still reads its responses).
func (n *epollNet) wait(until time.Duration) {
	for first := true; ; first = false {
		now := n.clk.now()
		if now-n.lastScan >= 10*time.Millisecond {
			n.timeouts(now)
		}
		late := now >= until
		if !first && late || n.e.stopped() {
			return
		}
		if n.head < len(n.pending) && !late {
			n.unqueue(now, openPerPass) // time to spare: the engine is on time again
		}
		timeout := 0
		if !late {
			timeout = -1
			if n.armed != until {
				if setTimer(n.timerfd, int64(until-now)) == nil {
					n.armed = until
				} else {
					timeout = 1 // no timer: look every millisecond
				}
			}
		}
		k, err := epollWait(n.epfd, n.events[:], timeout)
		if err != nil && err != syscall.EINTR {
			return
		}
		for i := 0; i < k; i++ {
			ev := n.events[i]
			fd := int(ev.Fd)
			if fd == n.timerfd {
				n.armed = -1
				continue
			}
			if fd >= len(n.byFD) || n.byFD[fd] == nil {
				continue
			}
			c := n.byFD[fd]
			if c.state == connConnecting && ev.Events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
				n.connected(c)
			} else if c.state == connWriting && ev.Events&syscall.EPOLLOUT != 0 {
				n.write(c)
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && c.state != connClosed && c.state != connConnecting {
				n.readable(c)
			}
		}
		if late {
			return
		}
	}
}

// timeouts fails the requests that have waited longer than their phase's timeout.
func (n *epollNet) timeouts(now time.Duration) {
	n.lastScan = now
	for _, c := range n.byFD {
		if c != nil && c.state != connIdle && c.state != connClosed && now-c.sentAt > c.a.phase.timeout {
			n.fail(c, errTimeout)
		}
	}
}

// close fails what is in flight (the run was stopped) and closes every connection.
func (n *epollNet) close() {
	for _, w := range n.pending[n.head:] {
		n.finish(w.a, exchange{lag: n.clk.now() - w.a.due, err: errStopped})
	}
	n.pending, n.head, n.behind = nil, 0, 0
	for _, c := range n.byFD {
		if c == nil {
			continue
		}
		if c.state != connIdle && c.state != connClosed {
			n.fail(c, errStopped)
		} else {
			n.drop(c)
		}
	}
	for _, p := range n.pools {
		p.idle = nil
	}
}

var errStopped = errors.New("the run was stopped")

var errUnsent = errors.New("the target closed the connection before the whole request was sent")
