package e2e

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// ftFault answers a request instead of the API and returns true, or
// returns false to let the API answer it.
type ftFault func(w http.ResponseWriter, r *http.Request) bool

// ftFront serves a fake API behind a switch: while a fault is armed it
// may answer requests itself. It records every request's URL.
type ftFront struct {
	URL   string
	api   *fakeapi.API
	fault atomic.Pointer[ftFault]

	mu   gosync.Mutex
	hits []string // path?query of every request
}

// ftStartFront serves a new fake API built from opts behind a ftFront.
func ftStartFront(t *testing.T, opts fakeapi.Options) *ftFront {
	t.Helper()
	f := &ftFront{api: fakeapi.New(opts)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits = append(f.hits, r.URL.RequestURI())
		f.mu.Unlock()
		if fn := f.fault.Load(); fn != nil && (*fn)(w, r) {
			return
		}
		f.api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// arm makes fn answer requests (nil disarms).
func (f *ftFront) arm(fn ftFault) {
	if fn == nil {
		f.fault.Store(nil)
		return
	}
	f.fault.Store(&fn)
}

// count returns how many requests since the last reset contained every one
// of parts in their path?query, and forgets them when reset is true.
func (f *ftFront) count(reset bool, parts ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, h := range f.hits {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(h, p)
		}
		if ok {
			n++
		}
	}
	if reset {
		f.hits = nil
	}
	return n
}

// onPage returns a fault that answers requests for page n with respond.
func ftOnPage(n string, respond func(w http.ResponseWriter)) ftFault {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("page") != n {
			return false
		}
		respond(w)
		return true
	}
}

// reply writes status, content type and body.
func ftReply(status int, contentType, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// ftJobState is one job of status --json.
type ftJobState struct {
	Name       string   `json:"name"`
	Status     string   `json:"status"`
	Checkpoint string   `json:"checkpoint"`
	HWM        string   `json:"hwm"`
	LastRun    *runJSON `json:"last_run"`
}

// ftStatus returns the job's entry of status --json.
func ftStatus(t *testing.T, dir, job string, env ...string) ftJobState {
	t.Helper()
	r := idemsync(t, dir, env, "status", job, "--json")
	var out struct {
		Jobs []ftJobState `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Jobs) != 1 || r.code != 0 {
		t.Fatalf("status --json: exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	return out.Jobs[0]
}

// ftTableStats returns the rows and the duplicate keys (rows beyond the first
// per id) of the orders table of a SQLite target; 0, 0 when it is missing.
func ftTableStats(t *testing.T, path, table string) (rows, dups int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.QueryRow(`SELECT COUNT(*), COUNT(*) - COUNT(DISTINCT id) FROM "`+table+`"`).Scan(&rows, &dups)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return rows, dups
}

// lost returns how many source keys the target lacks.
func ftLost(got, want map[int]row) int {
	n := 0
	for id := range want {
		if _, ok := got[id]; !ok {
			n++
		}
	}
	return n
}
