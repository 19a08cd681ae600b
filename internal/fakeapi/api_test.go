package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestNewDefaults(t *testing.T) {
	a := New(Options{})
	recs := a.Records()
	if len(recs) != 1000 || recs[0].ID != 1 || recs[999].ID != 1000 {
		t.Fatalf("got %d records", len(recs))
	}
	for i, r := range recs {
		if want := DefaultBaseTime.Add(time.Duration(i+1) * time.Second); !r.UpdatedAt.Equal(want) {
			t.Fatalf("record %d updated_at %v, want %v", r.ID, r.UpdatedAt, want)
		}
		if r.Name != fmt.Sprintf("Customer %d", r.ID) || r.Customer.Email != fmt.Sprintf("c%d@example.com", r.ID) || r.Tags == nil {
			t.Fatalf("record %+v", r)
		}
	}
	if New(Options{Records: -1}).Records() == nil || len(New(Options{Records: -1}).Records()) != 0 {
		t.Fatal("Records: -1 is not an empty data set")
	}
}

func TestSeedIsDeterministic(t *testing.T) {
	enc := func(o Options) string {
		b, _ := json.Marshal(New(o).Records())
		return string(b)
	}
	if first, again := enc(Options{Seed: 7}), enc(Options{Seed: 7}); first != again {
		t.Fatal("same seed, different data")
	}
	if enc(Options{Seed: 7}) == enc(Options{Seed: 8}) {
		t.Fatal("different seeds, same data")
	}
	// A record's content depends on (seed, id) only.
	a, b := New(Options{Records: 10}), New(Options{Records: 5})
	b.Add(5)
	ra, _ := a.Record(8)
	rb, _ := b.Record(8)
	if ra.Total != rb.Total || !slices.Equal(ra.Tags, rb.Tags) || ra.Active != rb.Active {
		t.Fatalf("record 8 differs: %+v vs %+v", ra, rb)
	}
}

func TestSameTimestampEvery(t *testing.T) {
	base := time.Date(2025, 6, 1, 12, 0, 0, 500, time.FixedZone("x", 3600))
	recs := New(Options{Records: 25, SameTimestampEvery: 10, BaseTime: base}).Records()
	want0 := time.Date(2025, 6, 1, 11, 0, 1, 0, time.UTC)
	for _, r := range recs {
		want := want0.Add(time.Duration((r.ID-1)/10) * time.Second)
		if !r.UpdatedAt.Equal(want) || r.UpdatedAt.Location() != time.UTC {
			t.Fatalf("record %d: %v, want %v", r.ID, r.UpdatedAt, want)
		}
	}
}

func TestUpdateMovesRecordToEndOfHWM(t *testing.T) {
	a, srv := newServer(t, Options{Records: 100})
	last := a.Records()[99].UpdatedAt
	if !a.Update(10, func(r *Record) { r.Total = 199905; r.Tags = append(r.Tags, "x"); r.ID = 555 }) {
		t.Fatal("Update(10) = false")
	}
	r, _ := a.Record(10)
	if r.Total.String() != "1999.05" || !r.UpdatedAt.After(last) || r.Tags[len(r.Tags)-1] != "x" {
		t.Fatalf("updated record %+v", r)
	}
	var body struct{ Data []Record }
	getJSON(t, srv.URL+"/hwm?limit=3&since="+last.Format(time.RFC3339), &body)
	if got := ids(body.Data); !slices.Equal(got, []int{100, 10}) {
		t.Fatalf("hwm since the old max = %v, want [100 10]", got)
	}
	// An explicit UpdatedAt is kept, even a stale one.
	stale := DefaultBaseTime.Add(-time.Hour)
	a.Update(20, func(r *Record) { r.UpdatedAt = stale })
	getJSON(t, srv.URL+"/hwm?limit=1", &body)
	if got := ids(body.Data); !slices.Equal(got, []int{20}) {
		t.Fatalf("hwm first = %v, want [20]", got)
	}
	if a.Update(1000, func(*Record) { t.Fatal("mutate called for a missing id") }) {
		t.Fatal("Update(1000) = true")
	}
}

func TestAddAndDelete(t *testing.T) {
	a := New(Options{Records: 3})
	added := a.Add(2)
	if len(added) != 2 || added[0].ID != 4 || added[1].ID != 5 || !added[1].UpdatedAt.After(added[0].UpdatedAt) {
		t.Fatalf("Add = %+v", added)
	}
	if !a.Delete(5) || a.Delete(5) || !a.Delete(2) {
		t.Fatal("Delete results")
	}
	if added := a.Add(1); added[0].ID != 6 {
		t.Fatalf("id reused: %d", added[0].ID)
	}
	if got := ids(a.Records()); !slices.Equal(got, []int{1, 3, 4, 6}) {
		t.Fatalf("ids %v", got)
	}
}

func TestRecordsIsACopy(t *testing.T) {
	a := New(Options{Records: 2})
	recs := a.Records()
	recs[0].Name = "x"
	recs[0].Tags = append(recs[0].Tags[:0], "zzz")
	if r, _ := a.Record(1); r.Name == "x" || slices.Contains(r.Tags, "zzz") {
		t.Fatal("Records shares memory with the data set")
	}
}

func TestCents(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{{"12.5", "12.50"}, {"12.50", "12.50"}, {"0.05", "0.05"}, {"-3", "-3.00"}, {"1999.05", "1999.05"}, {`"7.1"`, "7.10"}} {
		var v Cents
		if err := json.Unmarshal([]byte(c.in), &v); err != nil || v.String() != c.want {
			t.Errorf("%s: %v %v", c.in, v, err)
		}
		if b, _ := json.Marshal(v); string(b) != c.want {
			t.Errorf("marshal %s = %s", c.in, b)
		}
	}
	for _, bad := range []string{"1.234", "1e3", "", ".5", "1.", "abc", "--1"} {
		if _, err := ParseCents(bad); err == nil {
			t.Errorf("ParseCents(%q) accepted", bad)
		}
	}
}

func TestMutateEvery(t *testing.T) {
	a, srv := newServer(t, Options{Records: 100})
	a.MutateEvery(2, func(a *API) { a.Add(1) })
	var body struct {
		Data  []Record
		Total int
	}
	for i, want := range []int{100, 100, 101, 101, 102} {
		getJSON(t, srv.URL+"/offset?limit=1", &body)
		if body.Total != want {
			t.Fatalf("request %d: total %d, want %d", i+1, body.Total, want)
		}
	}
	get(t, srv.URL+"/page?page=0") // a 400 does not count
	getJSON(t, srv.URL+"/offset?limit=1", &body)
	if body.Total != 102 {
		t.Fatalf("total %d after a failed request", body.Total)
	}
	a.MutateEvery(0, nil)
}

// TestConcurrentUse runs readers on every route while writers mutate the
// data set and the configuration; run it with -race.
func TestConcurrentUse(t *testing.T) {
	a, srv := newServer(t, Options{Records: 300, PageSize: 20})
	a.MutateEvery(5, func(a *API) { a.Update(3, nil) })
	var wg sync.WaitGroup
	paths := []string{"/page?page=2", "/offset?offset=40", "/cursor", "/cursor-url", "/cursor-header",
		"/link?page=3", "/hwm?since=2024-01-01T00:01:00Z", "/all", "/page?updated_since=2024-01-01T00:02:00Z"}
	for _, p := range paths {
		wg.Go(func() {
			for range 30 {
				resp, err := http.Get(srv.URL + p)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			a.Update(1+i%300, func(r *Record) { r.Tags = append(r.Tags, "u"); r.Total++ })
			if i%10 == 0 {
				a.Add(1)
				a.Delete(2 + i)
				a.SetLatency(time.Duration(i%3) * time.Microsecond)
				a.SetFaults(Faults{})
			}
			_ = a.Records()
			_ = a.FaultCounts()
			_ = a.LastHeaders()
			_ = a.TotalRequests()
		}
	})
	wg.Wait()
	checkWalk(t, ids(pageByCursor(t, srv.URL, nil)), expected(a, time.Time{}, false))
}
