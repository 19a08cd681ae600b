package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"
)

// descAPI is an hwm API that filters by since (updated_at >= since) but
// sorts its records by updated_at descending, as an API does when the job
// forgot its sort parameter: the job says ascending, the API does not.
type descAPI struct{ a *vmAPI }

func (d descAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.a.mu.Lock()
	defer d.a.mu.Unlock()
	q := r.URL.Query()
	since := q.Get("since")
	var out []vmRec
	for _, rec := range d.a.recs {
		ts, _ := time.Parse(time.RFC3339Nano, rec.UpdatedAt)
		s, _ := time.Parse(time.RFC3339Nano, since)
		if since == "" || !ts.Before(s) {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt > out[j].UpdatedAt })
	limit, _ := strconv.Atoi(q.Get("limit"))
	out = out[:min(limit, len(out))]
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// An hwm API that returns its records newest first: the first page's
// highest mark is the newest record's, the request at it makes no
// progress, and the walk ended with exit 0 and a saved mark above the
// records of every page it never asked for. A page whose marks go down
// breaks the order the style relies on: the run fails and saves no mark
// past what it read.
func TestHWMDescendingRefused(t *testing.T) {
	t.Parallel()
	a := &vmAPI{}
	for id := 1; id <= 12; id++ {
		a.set(id, fmt.Sprintf("r%d", id), fmt.Sprintf("2024-01-01T00:%02d:00Z", id))
	}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", vmJob(serve(t, descAPI{a}), false))
	r := idemsync(t, dir, nil, "run", job)
	if r.code == 0 {
		got := readNames(t, dir+"/out.db", "orders")
		hwm := statusOf(t, dir, job).HWM
		for id := 1; id <= 12; id++ {
			if _, ok := got[id]; !ok {
				t.Errorf("exit 0, saved mark %s, but id %d (2024-01-01T00:%02d:00Z) is not in the table", hwm, id, id)
			}
		}
		return
	}
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if hwm := statusOf(t, dir, job).HWM; hwm != "" {
		t.Errorf("saved mark %q after a page out of order", hwm)
	}
	t.Logf("%s", r.stderr)
}
