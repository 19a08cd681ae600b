package e2e

import (
	"bytes"
	"io"
	"net"
	gosync "sync"
	"testing"
	"time"
)

// pgProxy is a TCP proxy between one "host" and the database: a real
// listener whose connections can be dropped, stalled and reset, including
// right after a COMMIT passes through it (the commit's answer is then
// lost), as a flaky network does.
type pgProxy struct {
	ln       net.Listener
	upstream string

	mu          gosync.Mutex
	conns       map[net.Conn]bool
	stallUntil  time.Time
	resetCommit bool // reset the next connection that sends COMMIT, after sending it
	resets      int  // connections reset after their COMMIT
}

func startProxy(t *testing.T, upstream string) *pgProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.drop() })
	return p
}

func (p *pgProxy) addr() string { return p.ln.Addr().String() }

func (p *pgProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up, true)
		go p.pipe(up, c, false)
	}
}

// pipe copies from src to dst, waiting out a stall; from the client, it
// resets both sides right after forwarding a COMMIT when armed.
func (p *pgProxy) pipe(src, dst net.Conn, fromClient bool) {
	defer p.closePair(src, dst, false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitStall()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if fromClient && bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit")) && p.takeCommitReset() {
				p.closePair(src, dst, true)
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *pgProxy) waitStall() {
	for {
		p.mu.Lock()
		until := p.stallUntil
		p.mu.Unlock()
		if time.Now().After(until) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *pgProxy) takeCommitReset() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.resetCommit {
		return false
	}
	p.resetCommit = false
	p.resets++
	return true
}

// closePair closes both connections, with a TCP reset when reset.
func (p *pgProxy) closePair(a, b net.Conn, reset bool) {
	for _, c := range []net.Conn{a, b} {
		if tc, ok := c.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
}

// drop resets every open connection.
func (p *pgProxy) drop() {
	p.mu.Lock()
	var all []net.Conn
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

// stall holds every byte in both directions for d.
func (p *pgProxy) stall(d time.Duration) {
	p.mu.Lock()
	p.stallUntil = time.Now().Add(d)
	p.mu.Unlock()
}

// armCommitReset resets the next connection that sends a COMMIT, right
// after the COMMIT left for the database.
func (p *pgProxy) armCommitReset() {
	p.mu.Lock()
	p.resetCommit = true
	p.mu.Unlock()
}
