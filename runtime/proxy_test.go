package runtime_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards 127.0.0.1 connections to a Redis and records when it
// accepted each one, so a test counts the connection attempts of the
// clients behind it. While cut, it closes every open connection and each
// new one as soon as it accepted it: the port answers but Redis does not,
// as behind a load balancer, so the go-redis dial succeeds and its
// handshake fails, and no dial-error breaker of go-redis hides an attempt.
// While subscriptions are blocked, a connection that sends SUBSCRIBE is
// closed at once, the others are served.
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]bool // open connections; true: it sent SUBSCRIBE
	accepted []time.Time
	cut      bool
	noSub    bool
}

// startProxy starts a proxy in front of target, closed at t.Cleanup.
func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		p.accepted = append(p.accepted, time.Now())
		cut := p.cut
		if !cut {
			p.conns[c] = false
		}
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *tcpProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	_, open := p.conns[c]
	p.mu.Unlock()
	if !open { // cut meanwhile
		_ = up.Close()
		return
	}
	done := make(chan struct{})
	go func() { // server to client
		defer close(done)
		_, _ = io.Copy(c, up)
		_ = c.Close()
	}()
	buf := make([]byte, 32<<10)
	for { // client to server
		n, err := c.Read(buf)
		if n > 0 {
			if bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
				p.mu.Lock()
				if _, ok := p.conns[c]; ok {
					p.conns[c] = true
				}
				block := p.noSub
				p.mu.Unlock()
				if block {
					break
				}
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = up.Close()
	p.drop(c)
	<-done
}

// drop closes c and forgets it.
func (p *tcpProxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// setCut cuts the link (every open connection is closed, new ones are
// closed at once) or restores it.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

// blockSubscriptions closes the open subscriptions and every connection
// that subscribes from now on, or lets them through again.
func (p *tcpProxy) blockSubscriptions(block bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noSub = block
	if block {
		for c, sub := range p.conns {
			if sub {
				_ = c.Close()
				delete(p.conns, c)
			}
		}
	}
}

// acceptedBetween counts the connections accepted in [from, to).
func (p *tcpProxy) acceptedBetween(from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.accepted {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// perSecond lists the connections accepted in each second from start to
// end.
func (p *tcpProxy) perSecond(start, end time.Time) []int {
	var out []int
	for s := start; s.Before(end); s = s.Add(time.Second) {
		to := s.Add(time.Second)
		if to.After(end) {
			to = end
		}
		out = append(out, p.acceptedBetween(s, to))
	}
	return out
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.setCut(true)
	p.wg.Wait()
}
