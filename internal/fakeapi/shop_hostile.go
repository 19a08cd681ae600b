package fakeapi

import (
	"net/http"
	"slices"
	"strconv"
)

// The shop's side of the hostile kinds of the fan-out model (parent
// deletions between and during child walks): parents deleted with their
// children, a hook run after each request (to delete one in the middle of
// a walk), and the log of removals that AbsentSince reads. Keys are
// "o:ID" for a parent and "i:PARENT|ID" for a child, as ShopKey writes
// them.

// ShopKey is the key AbsentSince takes: a parent's (child 0) or a child's.
func ShopKey(parent, child int) string {
	if child == 0 {
		return "o:" + strconv.Itoa(parent)
	}
	return "i:" + strconv.Itoa(parent) + "|" + strconv.Itoa(child)
}

// ShopPresence is which parents and children the shop held at one moment.
type ShopPresence struct {
	seq  int
	keys map[string]bool
}

// shopRemovals logs removals: a counter and each key's latest removal.
type shopRemovals struct {
	seq     int
	removed map[string]int
}

// removed logs the removal of key. The caller holds s.mu.
func (s *Shop) removedNow(key string) {
	s.gone.seq++
	if s.gone.removed == nil {
		s.gone.removed = map[string]int{}
	}
	s.gone.removed[key] = s.gone.seq
}

// keysLocked lists every key the shop holds. The caller holds s.mu.
func (s *Shop) keysLocked() map[string]bool {
	out := map[string]bool{}
	for _, p := range s.parents {
		out[ShopKey(p.ID, 0)] = true
		for _, c := range s.children[p.ID] {
			out[ShopKey(p.ID, c.ID)] = true
		}
	}
	return out
}

// Presence returns the shop's presence now.
func (s *Shop) Presence() ShopPresence {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return ShopPresence{seq: s.gone.seq, keys: s.keysLocked()}
}

// AbsentSince reports whether key (ShopKey) was absent from the shop at
// some moment from p up to now.
func (s *Shop) AbsentSince(p ShopPresence, key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !p.keys[key] || s.gone.removed[key] > p.seq {
		return true
	}
	return !s.keysLocked()[key]
}

// DeleteParent removes parent id and its children; the parent's child
// route then answers 404. It returns false when there is none.
func (s *Shop) DeleteParent(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.parentIndex(id)
	if !ok {
		return false
	}
	for _, c := range s.children[id] {
		s.removedNow(ShopKey(id, c.ID))
	}
	s.removedNow(ShopKey(id, 0))
	s.parents = slices.Delete(slices.Clone(s.parents), i, i+1)
	delete(s.children, id)
	return true
}

// OnRequest sets a function run after every response (nil: none), outside
// the shop's lock, so it may change the shop in the middle of a walk.
func (s *Shop) OnRequest(f func(r *http.Request)) {
	s.hook.Store(&f)
}

// afterRequest runs the OnRequest function, if any.
func (s *Shop) afterRequest(r *http.Request) {
	if f := s.hook.Load(); f != nil && *f != nil {
		(*f)(r)
	}
}
