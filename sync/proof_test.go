package sync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// The first reason that voids a pass's proof stays; a key the page before
// held (of the same parent's walk) is a shift; a total going down within
// one parent's walk is one too, across parents it is not.
func TestNoProofReasons(t *testing.T) {
	p, _ := epPager(t, "data", "  style: offset\n  size: 25\n  total: total\n")
	e := &Engine{Job: p.job}
	rs := &runState{info: &contract.RunInfo{}}
	page := func(keys ...string) []uint64 { return rs.hashPage(keys) }
	rs.noProof("")
	if rs.proof.reason != "" {
		t.Fatalf("an empty reason voided the proof: %q", rs.proof.reason)
	}

	e.checkShift(rs, page("a", "b"), "", false, "offset 0")
	e.checkShift(rs, page("c", "d"), "", false, "offset 2")
	if rs.proof.reason != "" {
		t.Fatalf("distinct pages voided the proof: %q", rs.proof.reason)
	}
	e.checkShift(rs, page("x"), "p2", false, "offset 0")
	e.checkShift(rs, page("d"), "p3", false, "offset 0") // d again, but another parent's walk
	if rs.proof.reason != "" {
		t.Fatalf("a key of another parent's walk voided the proof: %q", rs.proof.reason)
	}
	e.checkShift(rs, page("d", "e"), "p3", false, "offset 1")
	if !strings.Contains(rs.proof.reason, "read 1 key(s) twice (offset 1") {
		t.Fatalf("a repeated key: %q", rs.proof.reason)
	}
	first := rs.proof.reason
	rs.noProof("later")
	if rs.proof.reason != first {
		t.Fatalf("a later reason replaced the first: %q", rs.proof.reason)
	}

	rs = &runState{}
	resp := func(body string) *contract.Response { r, _ := epResp(t, p, body); return r }
	e.checkTotal(rs, []string{"a"}, &fetched{resp: resp(`{"data":[],"total":30}`), parent: "p1"}, "offset 0")
	e.checkTotal(rs, []string{"b"}, &fetched{resp: resp(`{"data":[],"total":3}`), parent: "p2"}, "offset 0")
	e.checkTotal(rs, []string{"c"}, &fetched{resp: resp(`{"data":[],"total":4}`), parent: "p2"}, "offset 1")
	if rs.proof.reason != "" {
		t.Fatalf("totals of two parents, or a growing total, voided the proof: %q", rs.proof.reason)
	}
	e.checkTotal(rs, []string{"d"}, &fetched{resp: resp(`{"data":[],"total":3}`), parent: "p2"}, "offset 2")
	if !strings.Contains(rs.proof.reason, "total went down from 4 to 3") {
		t.Fatalf("a shrinking total: %q", rs.proof.reason)
	}

	// Parents walked at once (fanout_concurrency) commit their pages
	// interleaved: each parent's walk is compared with its own pages.
	rs = &runState{info: &contract.RunInfo{}}
	e.checkTotal(rs, []string{"a"}, &fetched{resp: resp(`{"data":[],"total":5}`), parent: "p1"}, "offset 0")
	e.checkShift(rs, page("a", "b"), "p1", false, "offset 0")
	e.checkTotal(rs, []string{"x"}, &fetched{resp: resp(`{"data":[],"total":1}`), parent: "p2"}, "offset 0")
	e.checkShift(rs, page("x"), "p2", false, "offset 0")
	e.checkShift(rs, page("b", "c"), "p1", false, "offset 2")
	if !strings.Contains(rs.proof.reason, "read 1 key(s) twice (offset 2") {
		t.Fatalf("a repeated key after another parent's page: %q", rs.proof.reason)
	}
	rs = &runState{info: &contract.RunInfo{}}
	e.checkTotal(rs, []string{"a"}, &fetched{resp: resp(`{"data":[],"total":5}`), parent: "p1"}, "offset 0")
	e.checkTotal(rs, []string{"x"}, &fetched{resp: resp(`{"data":[],"total":1}`), parent: "p2"}, "offset 0")
	e.checkTotal(rs, []string{"d"}, &fetched{resp: resp(`{"data":[],"total":4}`), parent: "p1"}, "offset 2")
	if !strings.Contains(rs.proof.reason, "total went down from 5 to 4") {
		t.Fatalf("a shrinking total after another parent's page: %q", rs.proof.reason)
	}

	// The total the page's end decision read is the one checked: the body
	// is not read for it again.
	rs = &runState{}
	e.checkTotal(rs, []string{"a"}, &fetched{resp: resp(`{"data":[],"total":4}`)}, "offset 0")
	e.checkTotal(rs, []string{"b"}, &fetched{resp: resp(`{"data":[],"total":4}`), total: &pageTotal{n: 2, name: "total", ok: true}}, "offset 1")
	if !strings.Contains(rs.proof.reason, "total went down from 4 to 2") {
		t.Fatalf("the end decision's total was not the one checked: %q", rs.proof.reason)
	}
}

// keysStore serves a fixed list of seen keys.
type keysStore struct {
	contract.Store
	keys     []string
	complete bool
}

func (s keysStore) SeenKeys(_ context.Context, _ int64, fn func(string) error) (bool, error) {
	for _, k := range s.keys {
		if err := fn(k); err != nil {
			return false, err
		}
	}
	return s.complete, nil
}

// readPassKeys counts the pass's keys and the distinct ones; keysProve
// voids the proof of a page or offset walk that read one twice, and of an
// incomplete set, and lets a cursor walk's repeated key pass.
func TestPassKeysProve(t *testing.T) {
	p, _ := epPager(t, "data", "  style: offset\n  size: 25\n")
	c, _ := epPager(t, "data", "  style: cursor\n  next: next\n")
	for _, tc := range []struct {
		name     string
		job      *Job
		keys     []string
		complete bool
		read     int64
		distinct int64
		reason   string // "" proves
	}{
		{"distinct", p.job, []string{"a", "b", "c"}, true, 3, 3, ""},
		{"a repeated key", p.job, []string{"a", "b", "a"}, true, 3, 2, "2 distinct keys of 3"},
		{"incomplete", p.job, []string{"a"}, false, 1, 1, "without their keys"},
		{"a cursor walk's repeated key", c.job, []string{"a", "a"}, true, 2, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{Job: tc.job, Store: keysStore{keys: tc.keys, complete: tc.complete}}
			rs := &runState{info: &contract.RunInfo{ID: 1}}
			pk, err := e.readPassKeys(context.Background(), rs)
			if err != nil || pk.read != tc.read || pk.distinct != tc.distinct || pk.complete != tc.complete {
				t.Fatalf("readPassKeys = %+v, %v; want %d read, %d distinct", pk, err, tc.read, tc.distinct)
			}
			if ok := e.keysProve(rs, pk); ok != (tc.reason == "") || !strings.Contains(rs.proof.reason, tc.reason) {
				t.Fatalf("keysProve = %v, reason %q; want %q", ok, rs.proof.reason, tc.reason)
			}
		})
	}
}

// keyFormsSink gives each row's first value as its key form.
type keyFormsSink struct{ contract.Sink }

func (keyFormsSink) KeyForms(_ context.Context, _ *contract.Table, rows []contract.Row) ([]string, error) {
	var keys []string
	for _, r := range rows {
		keys = append(keys, fmt.Sprint(r.Values[0]))
	}
	return keys, nil
}

// A page's recorded keys are its rows' but its tombstones' (a tombstone's
// row is removed, not seen), whether the page has tombstones or not, and
// the page's rows are left as they were.
func TestPageKeysLeaveOutTombstones(t *testing.T) {
	p, _ := epPager(t, "data", "  style: offset\n  size: 25\n")
	p.job.Target.Deletes = contract.DeletesHard
	e := &Engine{Job: p.job}
	rs := &runState{info: &contract.RunInfo{ID: 1, Full: true, Kind: contract.KindRun}}
	row := func(id int, tomb bool) contract.Row { return contract.Row{Values: []any{id}, Tombstone: tomb} }
	for _, tc := range []struct {
		rows []contract.Row
		want []string
	}{
		{[]contract.Row{row(1, false), row(2, false)}, []string{"1", "2"}},
		{[]contract.Row{row(1, false), row(2, true), row(3, false), row(4, true)}, []string{"1", "3"}},
		{[]contract.Row{row(1, true)}, []string{}},
	} {
		before := slices.Clone(tc.rows)
		keys, err := e.pageKeys(context.Background(), rs, keyFormsSink{}, tc.rows, nil, "offset 0")
		if err != nil || !slices.Equal(keys, tc.want) || keys == nil {
			t.Errorf("pageKeys(%v) = %q, %v; want %q", tc.rows, keys, err, tc.want)
		}
		if !slices.EqualFunc(tc.rows, before, func(a, b contract.Row) bool { return a.Values[0] == b.Values[0] && a.Tombstone == b.Tombstone }) {
			t.Errorf("pageKeys changed the page's rows: %v, was %v", tc.rows, before)
		}
	}
}

// countingKeysStore is a keysStore that counts its reads.
type countingKeysStore struct {
	keysStore
	reads *int
}

func (s countingKeysStore) SeenKeys(ctx context.Context, id int64, fn func(string) error) (bool, error) {
	*s.reads++
	return s.keysStore.SeenKeys(ctx, id, fn)
}

// A pass this invocation ran from its first page counts the keys it hashed
// as it committed them; a continued pass, or one with a page hashed and not
// committed, reads them from the state; both count the same.
func TestPassKeysFromThisInvocation(t *testing.T) {
	p, _ := epPager(t, "data", "  style: offset\n  size: 25\n")
	stored := []string{"a", "b", "c", "a"}
	for _, tc := range []struct {
		name      string
		resumed   bool
		committed int64 // pages committed (rs.pages) of the two hashed
		pages     [][]string
		reads     int
		complete  bool
	}{
		{"this invocation's", false, 2, [][]string{{"a", "b"}, {"c", "a"}}, 0, true},
		{"a page without keys", false, 2, [][]string{{"a", "b"}, nil}, 0, false},
		{"continued", true, 2, [][]string{{"a", "b"}, {"c", "a"}}, 1, true},
		{"a page hashed, not committed", false, 1, [][]string{{"a", "b"}, {"c", "a"}}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			e := &Engine{Job: p.job, Store: countingKeysStore{keysStore{keys: stored, complete: true}, &reads}}
			rs := &runState{info: &contract.RunInfo{ID: 1}, resumed: tc.resumed, pages: tc.committed}
			for _, keys := range tc.pages {
				rs.hashPage(keys)
			}
			pk, err := e.readPassKeys(context.Background(), rs)
			if err != nil || reads != tc.reads || pk.complete != tc.complete {
				t.Fatalf("readPassKeys = %+v, %v after %d state reads; want %d reads, complete %v", pk, err, reads, tc.reads, tc.complete)
			}
			if tc.complete && (pk.read != 4 || pk.distinct != 3) {
				t.Fatalf("readPassKeys = %+v; want 4 read, 3 distinct", pk)
			}
		})
	}
}
