package fakeapi

import (
	"slices"
	"time"
)

// selection is the id-ordered list of records one request may see: every
// record, or those updated at or after an updated_since instant. It is only
// valid while the caller holds a.mu.
type selection struct {
	recs []Record
	idx  []int // positions in recs; nil means all of recs
}

func (s selection) len() int {
	if s.idx == nil {
		return len(s.recs)
	}
	return len(s.idx)
}

func (s selection) at(i int) *Record {
	if s.idx == nil {
		return &s.recs[i]
	}
	return &s.recs[s.idx[i]]
}

// window copies up to n records starting at position from. It returns an
// empty, non-nil slice when from is past the end.
func (s selection) window(from, n int) []Record {
	from = min(max(from, 0), s.len())
	to := min(from+max(n, 0), s.len())
	out := make([]Record, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, *s.at(i))
	}
	return out
}

// after returns the position of the first record whose id is greater than id.
func (s selection) after(id int) int {
	lo, hi := 0, s.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.at(m).ID <= id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// filteredView caches the last updated_since selection, so paging through an
// incremental window costs O(page) per request instead of O(records).
type filteredView struct {
	version uint64
	since   time.Time
	idx     []int
	valid   bool
}

// byID returns the records visible to a request, ordered by id. since is the
// request's updated_since, zero for none. The caller holds a.mu (read).
func (a *API) byID(since time.Time) selection {
	if since.IsZero() {
		return selection{recs: a.recs}
	}
	a.viewMu.Lock()
	defer a.viewMu.Unlock()
	v := &a.view
	if !v.valid || v.version != a.version || !v.since.Equal(since) {
		idx := []int{}
		for i := range a.recs {
			if !a.recs[i].UpdatedAt.Before(since) {
				idx = append(idx, i)
			}
		}
		*v = filteredView{version: a.version, since: since, idx: idx, valid: true}
	}
	return selection{recs: a.recs, idx: v.idx}
}

// byTime copies up to limit records with updated_at >= since, ascending by
// (updated_at, id). The caller holds a.mu (read).
func (a *API) byTime(since time.Time, limit int) []Record {
	i, _ := slices.BinarySearchFunc(a.order, key{since, 0}, key.cmp)
	end := min(i+limit, len(a.order))
	out := make([]Record, 0, max(end-i, 0))
	for ; i < end; i++ {
		if p, ok := a.find(a.order[i].id); ok {
			out = append(out, a.recs[p])
		}
	}
	return out
}
