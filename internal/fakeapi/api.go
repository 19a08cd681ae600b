package fakeapi

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures New. The zero value is a usable 1000-record data set.
type Options struct {
	// Records is the number of records, with ids 1..Records. Defaults to
	// 1000; a negative value means an empty data set.
	Records int
	// PageSize is the page size when a request names none. Defaults to 50.
	PageSize int
	// Latency is slept at the start of every request (the request's context
	// cuts it short). Defaults to none; see also SetLatency.
	Latency time.Duration
	// Seed makes record contents (totals, flags, tags) reproducible. Records
	// with the same Seed and id are identical. Defaults to 0.
	Seed int64
	// BaseTime is the updated_at origin: record i is updated at BaseTime+i
	// seconds. Defaults to 2024-01-01T00:00:00Z; it is truncated to seconds
	// and converted to UTC.
	BaseTime time.Time
	// SameTimestampEvery, when > 1, makes runs of that many consecutive ids
	// share one updated_at (ids 1..k at BaseTime+1s, k+1..2k at BaseTime+2s,
	// ...), for high-water-mark boundary tests. Defaults to 1 (all distinct).
	SameTimestampEvery int
	// Faults configures fault injection; the zero value injects none.
	Faults Faults
	// Token, when set, makes every request require the header
	// "Authorization: Bearer <Token>"; others get 401 with a JSON error.
	Token string
	// Quirks are misbehaviours around the end of pagination (see Quirks
	// and SetQuirks); the zero value has none.
	Quirks Quirks
}

// API is the fake data set and its HTTP handler. All methods are safe for
// concurrent use, including while requests are being served.
type API struct {
	pageSize int
	seed     int64
	token    string
	latency  atomic.Int64 // time.Duration

	mu      sync.RWMutex
	recs    []Record // sorted by id
	order   []key    // sorted by (updated_at, id)
	clock   time.Time
	nextID  int
	version uint64 // bumped by every mutation

	viewMu sync.Mutex
	view   filteredView

	faults faultInjector
	quirks quirkState

	obs observer
}

// key is a record's position in the hwm order.
type key struct {
	at time.Time
	id int
}

func (k key) cmp(o key) int {
	if c := k.at.Compare(o.at); c != 0 {
		return c
	}
	return k.id - o.id
}

// DefaultBaseTime is Options.BaseTime's default.
var DefaultBaseTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// New builds the data set described by opts. It panics when opts.Faults names
// an unknown fault kind (see Faults.Validate), as that is a bug in the test.
func New(opts Options) *API {
	if opts.Records == 0 {
		opts.Records = 1000
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.BaseTime.IsZero() {
		opts.BaseTime = DefaultBaseTime
	}
	if opts.SameTimestampEvery < 1 {
		opts.SameTimestampEvery = 1
	}
	base := opts.BaseTime.UTC().Truncate(time.Second)
	a := &API{
		pageSize: opts.PageSize,
		seed:     opts.Seed,
		token:    opts.Token,
		clock:    base,
		nextID:   1,
	}
	a.latency.Store(int64(opts.Latency))
	for id := 1; id <= opts.Records; id++ {
		at := base.Add(time.Duration((id-1)/opts.SameTimestampEvery+1) * time.Second)
		a.recs = append(a.recs, generate(a.seed, id, at))
		a.order = append(a.order, key{at, id})
		a.clock, a.nextID = at, id+1
	}
	a.obs.reset()
	a.SetFaults(opts.Faults)
	a.SetQuirks(opts.Quirks)
	return a
}

// Records returns a copy of every record, sorted by id.
func (a *API) Records() []Record {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]Record, len(a.recs))
	for i, r := range a.recs {
		out[i] = r.clone()
	}
	return out
}

// Record returns a copy of record id, or false when there is none.
func (a *API) Record(id int) (Record, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	i, ok := a.find(id)
	if !ok {
		return Record{}, false
	}
	return a.recs[i].clone(), true
}

// Update applies mutate to a copy of record id and stores it. Unless mutate
// sets UpdatedAt itself, updated_at becomes a new maximum (one second past
// the largest updated_at so far), which moves the record to the end of the
// hwm order. mutate cannot change the id. Update returns false, without
// calling mutate, when there is no record id.
func (a *API) Update(id int, mutate func(*Record)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.find(id)
	if !ok {
		return false
	}
	old := a.recs[i]
	r := old.clone()
	if mutate != nil {
		mutate(&r)
	}
	r.ID = id
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if r.UpdatedAt.Equal(old.UpdatedAt) {
		a.clock = a.clock.Add(time.Second)
		r.UpdatedAt = a.clock
	} else {
		r.UpdatedAt = r.UpdatedAt.UTC()
		if r.UpdatedAt.After(a.clock) {
			a.clock = r.UpdatedAt
		}
	}
	a.removeKey(key{old.UpdatedAt, id})
	a.insertKey(key{r.UpdatedAt, id})
	a.recs[i] = r
	a.version++
	return true
}

// Add appends n new records with the next ids, each with a new maximum
// updated_at, and returns copies of them.
func (a *API) Add(n int) []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Record, 0, max(n, 0))
	for range n {
		a.clock = a.clock.Add(time.Second)
		r := generate(a.seed, a.nextID, a.clock)
		a.nextID++
		a.recs = append(a.recs, r)
		a.order = append(a.order, key{r.UpdatedAt, r.ID})
		out = append(out, r.clone())
	}
	a.version++
	return out
}

// Delete removes record id and reports whether it existed. Its id is never
// reused.
func (a *API) Delete(id int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.find(id)
	if !ok {
		return false
	}
	a.removeKey(key{a.recs[i].UpdatedAt, id})
	a.recs = slices.Delete(a.recs, i, i+1)
	a.version++
	return true
}

// SetLatency changes the per-request latency for requests that start later.
func (a *API) SetLatency(d time.Duration) { a.latency.Store(int64(d)) }

// find returns the position of id in a.recs. The caller holds a.mu.
func (a *API) find(id int) (int, bool) {
	return slices.BinarySearchFunc(a.recs, id, func(r Record, id int) int { return r.ID - id })
}

func (a *API) removeKey(k key) {
	if i, ok := slices.BinarySearchFunc(a.order, k, key.cmp); ok {
		a.order = slices.Delete(a.order, i, i+1)
	}
}

func (a *API) insertKey(k key) {
	i, _ := slices.BinarySearchFunc(a.order, k, key.cmp)
	a.order = slices.Insert(a.order, i, k)
}
