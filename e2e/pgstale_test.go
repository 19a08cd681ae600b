package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// staleGate answers the first request for page n with the page as it was
// when the request arrived, but only once it is opened: a response in
// flight to a holder that is then paused.
type staleGate struct {
	gate
}

func (g *staleGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("page") != g.n {
		g.h.ServeHTTP(w, r)
		return
	}
	held := false
	g.once.Do(func() { held = true })
	if !held {
		g.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	g.h.ServeHTTP(rec, r)
	close(g.arrived)
	select {
	case <-g.open:
	case <-r.Context().Done():
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// A holder paused (SIGSTOP) with a page in flight, past its lease, while
// another host takes the job over and completes it with the source's
// newer values: continued (SIGCONT), its page arrives, but it is past its
// trusted time and writes nothing, to the target (a SQLite file, which no
// token fences) included: it exits 4 and the table still equals the
// source (docs/operations.md, "Leases").
func TestPostgresStatePausedHolderWritesNoStalePage(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "1s")
	env := []string{"IDEMSYNC_STATE=" + state}
	api := fakeapi.New(fakeapi.Options{Records: 300, Latency: 2 * time.Millisecond})
	g := &staleGate{gate{h: api, n: "5", arrived: make(chan struct{}), open: make(chan struct{})}}
	apiURL := serve(t, g)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))

	first, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
	g.reached(t, errOut, done)
	time.Sleep(300 * time.Millisecond) // the page before commits
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the first one's lease
	for id := 101; id <= 125; id++ {    // page 5, as the first holder fetched it, is stale now
		api.Update(id, func(r *fakeapi.Record) { r.Name = "renamed after the pause" })
	}
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("second run after the first's lease expired: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	_ = first.Process.Signal(syscall.SIGCONT)
	close(g.open)
	if code := exitCode(<-done); code != 4 {
		t.Errorf("the first run, continued after the takeover: exit %d, want 4: %s", code, errOut)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
