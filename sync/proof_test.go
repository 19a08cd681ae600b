package sync

import (
	"errors"
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
	rs := &runState{}
	rs.noProof("")
	if rs.proof.reason != "" {
		t.Fatalf("an empty reason voided the proof: %q", rs.proof.reason)
	}

	e.checkShift(rs, []string{"a", "b"}, "", "offset 0")
	e.checkShift(rs, []string{"c", "d"}, "", "offset 2")
	if rs.proof.reason != "" {
		t.Fatalf("distinct pages voided the proof: %q", rs.proof.reason)
	}
	e.checkShift(rs, []string{"x"}, "p2", "offset 0")
	e.checkShift(rs, []string{"d"}, "p3", "offset 0") // d again, but another parent's walk
	if rs.proof.reason != "" {
		t.Fatalf("a key of another parent's walk voided the proof: %q", rs.proof.reason)
	}
	e.checkShift(rs, []string{"d", "e"}, "p3", "offset 1")
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
	e.checkTotal(rs, []string{"a"}, resp(`{"data":[],"total":30}`), "p1", "offset 0")
	e.checkTotal(rs, []string{"b"}, resp(`{"data":[],"total":3}`), "p2", "offset 0")
	e.checkTotal(rs, []string{"c"}, resp(`{"data":[],"total":4}`), "p2", "offset 1")
	if rs.proof.reason != "" {
		t.Fatalf("totals of two parents, or a growing total, voided the proof: %q", rs.proof.reason)
	}
	e.checkTotal(rs, []string{"d"}, resp(`{"data":[],"total":3}`), "p2", "offset 2")
	if !strings.Contains(rs.proof.reason, "total went down from 4 to 3") {
		t.Fatalf("a shrinking total: %q", rs.proof.reason)
	}
}

// distinctKeys fails the loading of a page or offset walk's keys when one
// came twice, after handing every key on; a cursor walk's are not checked.
func TestDistinctKeys(t *testing.T) {
	keys := func(ks ...string) func(fn func(string) error) error {
		return func(fn func(string) error) error {
			for _, k := range ks {
				if err := fn(k); err != nil {
					return err
				}
			}
			return nil
		}
	}
	p, _ := epPager(t, "data", "  style: offset\n  size: 25\n")
	e := &Engine{Job: p.job}
	n := 0
	count := func(string) error { n++; return nil }
	if err := e.distinctKeys(keys("a", "b", "c"))(count); err != nil || n != 3 {
		t.Fatalf("distinct keys: %v after %d", err, n)
	}
	err := e.distinctKeys(keys("a", "b", "a"))(count)
	if reason, ok := noProofOf(err); !ok || !strings.Contains(reason, "1 key(s) twice") || !strings.Contains(reason, "2 distinct keys of 3") {
		t.Fatalf("a repeated key: %v", err)
	}
	boom := errors.New("boom")
	if err := e.distinctKeys(keys("a"))(func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("an error of fn: %v", err)
	}
	c, _ := epPager(t, "data", "  style: cursor\n  next: next\n")
	if err := (&Engine{Job: c.job}).distinctKeys(keys("a", "a"))(count); err != nil {
		t.Fatalf("a cursor walk's keys: %v", err)
	}
}
