package e2e

import (
	"bytes"
	endian "encoding/binary"
	"net"
	"regexp"
	gosync "sync"
	"testing"
	"time"
)

// pgProxy is a TCP proxy between one "host" and the database: a real
// listener whose connections can be dropped, stalled and reset, including
// right after a page's checkpoint committed (its answer is then lost), as
// a flaky network does. It reads the PostgreSQL protocol (pgwire) to know
// when that happened.
type pgProxy struct {
	ln       net.Listener
	upstream string

	mu          gosync.Mutex
	conns       map[net.Conn]bool
	stallUntil  time.Time
	resetCommit bool // reset the next connection whose page commits, before its answer
	resets      int  // connections reset right after their page committed
	pages       int  // page commits seen, reset or not
}

// pageInsert is the page's own statement in checkpoint/pgstate's page
// batch (pageBatch): the statement that marks a transaction as a page's.
var pageInsert = regexp.MustCompile(`INSERT INTO \S+\.pages \(run_id, seq, position`)

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
		pc := &pgConn{}
		go p.pipe(c, up, pc, true)
		go p.pipe(up, c, pc, false)
	}
}

// pgConn is what the proxy knows of one connection's protocol state.
type pgConn struct {
	mu       gosync.Mutex
	sslReply int             // one-byte answers the server owes to SSL requests
	pageStmt map[string]bool // prepared statements that are the page's (a cache's, or the unnamed one)
	page     bool            // a page's statement was executed and its transaction has not ended
}

// pipe copies whole protocol messages from src to dst, waiting out a
// stall. From the client it notes a page's statement; from the server it
// sees that transaction end committed (ReadyForQuery "idle" with no error
// or ROLLBACK since) and then, when armed, resets both sides instead of
// forwarding that ReadyForQuery: the page committed, the client never
// learns it.
func (p *pgProxy) pipe(src, dst net.Conn, pc *pgConn, fromClient bool) {
	defer p.closePair(src, dst, false)
	var pending []byte
	startup := fromClient // the client's first message has no type byte
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		pending = append(pending, buf[:n]...)
		sent := 0
		for {
			var size int
			var reset bool
			if fromClient {
				size, startup = pc.client(pending[sent:], startup)
			} else {
				size, reset = p.server(pending[sent:], pc)
			}
			if size == 0 {
				break
			}
			if reset {
				p.waitStall()
				if _, werr := dst.Write(pending[:sent]); werr == nil {
					p.closePair(src, dst, true)
				}
				return
			}
			sent += size
		}
		if sent > 0 {
			p.waitStall()
			if _, werr := dst.Write(pending[:sent]); werr != nil {
				return
			}
			pending = append(pending[:0], pending[sent:]...)
		}
		if err != nil {
			return
		}
	}
}

// client reads the client's next whole message at the start of b: its
// size (0 when incomplete) and whether the next one is untyped still.
func (pc *pgConn) client(b []byte, startup bool) (int, bool) {
	if startup {
		if len(b) < 8 || len(b) < int(endian.BigEndian.Uint32(b)) {
			return 0, true
		}
		size := int(endian.BigEndian.Uint32(b))
		if endian.BigEndian.Uint32(b[4:]) == 80877103 { // SSLRequest: answered with one byte, then a startup
			pc.mu.Lock()
			pc.sslReply++
			pc.mu.Unlock()
			return size, true
		}
		return size, false
	}
	typ, body, size := pgMessage(b)
	if size == 0 {
		return 0, false
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	switch typ {
	case 'Q': // a simple Query
		pc.page = pc.page || pageInsert.Match(body)
	case 'P': // Parse: statement name, text; a later Bind executes it
		name, rest, _ := bytes.Cut(body, []byte{0})
		if pc.pageStmt == nil {
			pc.pageStmt = map[string]bool{}
		}
		pc.pageStmt[string(name)] = pageInsert.Match(rest)
	case 'B': // Bind: portal name, statement name
		_, rest, _ := bytes.Cut(body, []byte{0})
		name, _, _ := bytes.Cut(rest, []byte{0})
		pc.page = pc.page || pc.pageStmt[string(name)]
	}
	return size, false
}

// server reads the server's next whole message at the start of b: its
// size (0 when incomplete), and whether the connection must be reset
// instead of forwarding it.
func (p *pgProxy) server(b []byte, pc *pgConn) (int, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.sslReply > 0 {
		if len(b) == 0 {
			return 0, false
		}
		pc.sslReply--
		return 1, false
	}
	typ, body, size := pgMessage(b)
	if size == 0 || !pc.page {
		return size, false
	}
	switch {
	case typ == 'E', typ == 'C' && string(body) == "ROLLBACK\x00":
		pc.page = false // the page's transaction fails or rolls back
	case typ == 'Z' && len(body) == 1 && body[0] == 'E':
		pc.page = false // a failed transaction block: it will roll back
	case typ == 'Z' && len(body) == 1 && body[0] == 'I':
		pc.page = false // idle again without an error: the page committed
		return size, p.pageCommitted()
	}
	return size, false
}

// pgMessage splits a typed message off the start of b: type, body and
// size, or size 0 when b holds only part of it.
func pgMessage(b []byte) (byte, []byte, int) {
	if len(b) < 5 {
		return 0, nil, 0
	}
	size := 1 + int(endian.BigEndian.Uint32(b[1:]))
	if len(b) < size {
		return 0, nil, 0
	}
	return b[0], b[5:size], size
}

// pageCommitted counts a page commit and reports whether it is the one
// to reset after.
func (p *pgProxy) pageCommitted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages++
	if !p.resetCommit {
		return false
	}
	p.resetCommit = false
	p.resets++
	return true
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

// armCommitReset resets the next connection whose page commits, between
// the database's commit and its answer.
func (p *pgProxy) armCommitReset() {
	p.mu.Lock()
	p.resetCommit = true
	p.mu.Unlock()
}

// commitCounts returns the page commits seen and the connections reset
// right after one.
func (p *pgProxy) commitCounts() (pages, resets int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pages, p.resets
}
