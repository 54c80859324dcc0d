package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// proxy forwards 127.0.0.1 connections to Redis and can cut the network:
// during a cut every open connection is closed and new ones are closed at
// once, as when a link goes down.
type proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	cutUntil time.Time
}

func startProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		cut := time.Now().Before(p.cutUntil)
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.track(c, up)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
	go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
	wg.Wait()
	p.untrack(c, up)
}

func (p *proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// cut drops every connection and refuses new ones for d.
func (p *proxy) cut(d time.Duration) {
	p.mu.Lock()
	p.cutUntil = time.Now().Add(d)
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *proxy) close() { _ = p.ln.Close() }
