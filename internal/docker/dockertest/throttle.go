package dockertest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"
)

// Link is a rate limit that one or more Throttles share: proxies on one
// Link split its bandwidth, as flows over one network link do.
type Link struct{ lim *rate.Limiter }

// NewLink limits to bytesPerSec (0: no limit). The burst is one copy
// buffer, so the rate holds over any span longer than a few milliseconds.
func NewLink(bytesPerSec int) *Link {
	if bytesPerSec <= 0 {
		return &Link{lim: rate.NewLimiter(rate.Inf, chunk)}
	}
	return &Link{lim: rate.NewLimiter(rate.Limit(bytesPerSec), chunk)}
}

const chunk = 32 << 10

// Throttle is a TCP proxy on a loopback port in front of target: what the
// target sends back is paced by the Link (requests go through unpaced: they
// are small). It stands for the network between a lab node and a remote
// registry or dataset mirror, and lets a test cut every connection or
// watch how many bytes went through.
type Throttle struct {
	ln     net.Listener
	target string
	link   *Link
	down   atomic.Int64 // bytes sent to clients
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// NewThrottle listens on 127.0.0.1 and forwards to target; it is closed
// when the test ends.
func NewThrottle(t testing.TB, target string, link *Link) *Throttle {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Throttle{ln: ln, target: target, link: link, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Throttle) Addr() string { return p.ln.Addr().String() }

// Sent is how many bytes the proxy has passed from the target to clients.
func (p *Throttle) Sent() int64 { return p.down.Load() }

// Cut closes every open connection (new ones are still accepted).
func (p *Throttle) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and closes its connections.
func (p *Throttle) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Cut()
}

func (p *Throttle) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Throttle) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Throttle) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *Throttle) handle(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close() // the target is down: the client sees a reset connection
		return
	}
	if !p.track(c, u) {
		c.Close()
		u.Close()
		return
	}
	defer p.untrack(c, u)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		if tc, ok := u.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	buf := make([]byte, chunk)
	for {
		n, err := u.Read(buf)
		if n > 0 {
			if p.link.lim.WaitN(context.Background(), n) != nil {
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
			p.down.Add(int64(n))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				<-done
			}
			return
		}
	}
}
