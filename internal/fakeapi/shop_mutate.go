package fakeapi

import (
	"slices"
	"time"
)

// tick advances the shop's clock by a second and returns it. The caller
// holds s.mu.
func (s *Shop) tick() time.Time {
	s.clock = s.clock.Add(time.Second)
	return s.clock
}

// parentIndex returns the position of parent id. The caller holds s.mu.
func (s *Shop) parentIndex(id int) (int, bool) {
	return slices.BinarySearchFunc(s.parents, id, func(p ShopParent, id int) int { return p.ID - id })
}

// touch gives parent id a new updated_at, as an API does when one of its
// children changes. The caller holds s.mu.
func (s *Shop) touch(id int) bool {
	i, ok := s.parentIndex(id)
	if ok {
		s.parents[i].UpdatedAt = s.tick()
	}
	return ok
}

// TouchParent gives parent id a new updated_at (and nothing else), so a
// `parent_rows: changed` child walk picks it. It returns false when there
// is no such parent.
func (s *Shop) TouchParent(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.touch(id)
}

// UpdateParent changes parent id's status and total and its updated_at,
// leaving its children as they are. It returns false when there is none.
func (s *Shop) UpdateParent(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.parentIndex(id)
	if !ok {
		return false
	}
	p := &s.parents[i]
	p.Status = []string{"open", "paid", "shipped", "refunded"}[s.rng.IntN(4)]
	p.Total += Cents(1 + s.rng.IntN(1000))
	p.UpdatedAt = s.tick()
	return true
}

// AddParents appends n parents with the next ids, each with 0..max
// children, and returns them.
func (s *Shop) AddParents(n, maxChildren int) []ShopParent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ShopParent
	for range n {
		id := 1
		if k := len(s.parents); k > 0 {
			id = s.parents[k-1].ID + 1
		}
		out = append(out, s.addParent(id, s.rng.IntN(maxChildren+1), len(s.customers)))
	}
	return out
}

// AddChildren appends n children to parent id, touches the parent, and
// returns them (nil when there is no such parent).
func (s *Shop) AddChildren(id, n int) []ShopChild {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.parentIndex(id); !ok {
		return nil
	}
	var out []ShopChild
	for range n {
		out = append(out, s.newChild(id, s.rng))
	}
	s.touch(id)
	return out
}

// UpdateChild changes the quantity and updated_at of child childID of
// parent id and touches the parent. It returns false when there is none.
func (s *Shop) UpdateChild(id, childID int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	kids := s.children[id]
	i := slices.IndexFunc(kids, func(c ShopChild) bool { return c.ID == childID })
	if i < 0 {
		return false
	}
	kids[i].Qty += 1 + s.rng.IntN(5)
	kids[i].UpdatedAt = s.tick()
	s.touch(id)
	return true
}

// DeleteChild removes child childID of parent id and touches the parent.
// It returns false when there is none.
func (s *Shop) DeleteChild(id, childID int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	kids := s.children[id]
	i := slices.IndexFunc(kids, func(c ShopChild) bool { return c.ID == childID })
	if i < 0 {
		return false
	}
	s.children[id] = slices.Delete(slices.Clone(kids), i, i+1)
	s.touch(id)
	return true
}

// ShopSnapshot is a copy of a shop's parents and children at one moment.
type ShopSnapshot struct {
	Parents  map[int]ShopParent
	Children map[int][]ShopChild // by parent id
}

// Snapshot returns a copy of the data set.
func (s *Shop) Snapshot() ShopSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := ShopSnapshot{Parents: map[int]ShopParent{}, Children: map[int][]ShopChild{}}
	for _, p := range s.parents {
		out.Parents[p.ID] = p
		out.Children[p.ID] = slices.Clone(s.children[p.ID])
	}
	return out
}

// DeleteParent removes parent id and its children: the parents route no
// longer lists it, and its children route answers 404. It returns false
// when there is none.
func (s *Shop) DeleteParent(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.parentIndex(id)
	if !ok {
		return false
	}
	s.parents = slices.Delete(slices.Clone(s.parents), i, i+1)
	delete(s.children, id)
	return true
}
