package sync

import (
	"context"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// statelessSink is a memSink whose database cannot tell whether a table
// exists.
type statelessSink struct{ *memSink }

func (statelessSink) TableState(context.Context, *contract.Table) (bool, bool, error) {
	return false, false, contract.ErrNotImplemented
}

// A database that cannot do what the job needs is refused as soon as the
// target is opened: nothing fetched, no run recorded (a sink without
// sweeps used to walk a whole full pass, then fail; one without table
// state silently lost the target-lost check).
func TestProbeRefusesIncompleteSink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string // appended to the target block
		sink   func(*memSink) contract.Sink
		want   string
	}{
		{"no sweeps, deletes hard", "  deletes: hard\n", func(m *memSink) contract.Sink { return m }, "cannot sweep deleted rows"},
		{"no sweeps, deletes soft", "  deletes: soft\n", func(m *memSink) contract.Sink { return m }, "cannot sweep deleted rows"},
		{"no table state", "", func(m *memSink) contract.Sink { return statelessSink{m} }, "cannot tell whether the table exists"},
		{"no change feed, changes", "  changes: true\n", func(m *memSink) contract.Sink { return m }, "cannot keep a change feed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newEngineRig()
			spec := "name: items\nsource:\n  url: http://api.test/items\n  records: data\npagination:\n" + cursorStyle +
				"target:\n  url: sqlite:out.db\n  table: items\n  key: [id]\n  columns:\n    id: {path: id, type: integer}\n" + tc.target
			job := testJob(t, spec)
			src := &fakeSource{records: "data", serve: cursorAPI(3, 3)}
			e := rig.engine(job, src)
			s := tc.sink(rig.sink)
			e.OpenSink = func(context.Context) (contract.Sink, error) { return s, nil }
			_, err := e.Run(context.Background(), Options{})
			if contract.ClassOf(err) != contract.Invalid || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v (%v), want %v naming %q", err, contract.ClassOf(err), contract.Invalid, tc.want)
			}
			if len(src.urls) != 0 || len(rig.store.runs) != 0 {
				t.Errorf("fetched %v, recorded %d run(s): want nothing before the refusal", src.urls, len(rig.store.runs))
			}
		})
	}
}
