package fakeapi

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// Hostile kinds are never drawn unless enabled, the same seed and set give
// the same scenario, enabling one more kind leaves the others' draws, and
// every kind is drawn somewhere in 100 seeds.
func TestNewHostileScenario(t *testing.T) {
	all := map[string]bool{}
	for _, k := range HostileKinds {
		all[k] = true
	}
	drawn := map[string]bool{}
	for seed := int64(1); seed <= 100; seed++ {
		if s := NewHostileScenario(seed, nil, nil); !reflect.DeepEqual(s, NewScenario(seed, nil)) {
			t.Fatalf("seed %d: no kind enabled, yet %v", seed, s)
		}
		a, b := NewHostileScenario(seed, nil, all), NewHostileScenario(seed, nil, all)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		for _, k := range a.Hostiles {
			drawn[k] = true
		}
		only := NewHostileScenario(seed, nil, map[string]bool{"nullerror": true})
		if only.IsHostile("nullerror") != a.IsHostile("nullerror") {
			t.Errorf("seed %d: nullerror drawn %v alone, %v with every kind", seed, only.IsHostile("nullerror"), a.IsHostile("nullerror"))
		}
		if a.IsHostile("versionback") && (a.Deletes != "soft" || !a.FullPasses()) {
			t.Errorf("seed %d: versionback without soft full passes: %v", seed, a)
		}
	}
	for _, k := range HostileKinds {
		if !drawn[k] {
			t.Errorf("hostile kind %s never drawn in 100 seeds", k)
		}
	}
}

// AbsentSince sees a removal after the presence was taken even when the
// record is back, and a record missing at that moment; a key swap changes
// what is served, not the data set.
func TestModelAbsentSince(t *testing.T) {
	sc := NewScenario(1, nil)
	sc.Style, sc.Behaviours, sc.N, sc.Size = "cursor", nil, 10, 5
	m := NewModelAPI(sc)
	p := m.Presence()
	if m.AbsentSince(p, 3) {
		t.Fatal("record 3 absent before anything happened")
	}
	m.Delete(3)
	m.Restore(true, 3)
	if !m.AbsentSince(p, 3) {
		t.Error("record 3, deleted and restored since, never absent")
	}
	if m.AbsentSince(m.Presence(), 3) {
		t.Error("record 3 absent after its restore")
	}
	if !m.AbsentSince(p, 11) {
		t.Error("record 11, never held, not absent")
	}
	m.SetSwap(true)
	srv := httptest.NewServer(m)
	defer srv.Close()
	_, recs := modelGet(t, srv, "limit=5")
	if len(recs) == 0 || recs[0].ID != 1+SwapOffset {
		t.Errorf("swapped page: %v", recs)
	}
	if m.AbsentSince(p, 1) {
		t.Error("a swap made record 1 absent from the data set")
	}
}

// A deleted parent takes its children with it: both are absent since a
// presence taken before, its child route answers 404, and the OnRequest
// hook runs after each response.
func TestShopDeleteParent(t *testing.T) {
	s := NewShop(ShopOptions{Parents: 5, MaxChildren: 3, Seed: 7})
	var id int
	for _, p := range s.Parents() {
		if len(s.Children(p.ID)) > 0 {
			id = p.ID
			break
		}
	}
	child := s.Children(id)[0].ID
	p := s.Presence()
	if s.AbsentSince(p, ShopKey(id, 0)) || s.AbsentSince(p, ShopKey(id, child)) {
		t.Fatal("absent before the delete")
	}
	calls := 0
	s.OnRequest(func(*http.Request) { calls++ })
	if !s.DeleteParent(id) {
		t.Fatal("DeleteParent found no parent")
	}
	if !s.AbsentSince(p, ShopKey(id, 0)) || !s.AbsentSince(p, ShopKey(id, child)) {
		t.Error("parent or child not absent after the delete")
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Get(srv.URL + s.ChildPath(id))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || calls != 1 {
		t.Errorf("deleted parent's children: %d, hook ran %d times", resp.StatusCode, calls)
	}
}
