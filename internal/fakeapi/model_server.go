package fakeapi

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	gosync "sync"
	"time"
)

// ModelRecord is one record of a model scenario's data set.
type ModelRecord struct {
	ID        int    `json:"id"`
	V         string `json:"v"`
	UpdatedAt string `json:"updated_at"`
	// Ver is the record's version (target.version in versionback
	// scenarios): it grows with every change, and null or lower only when
	// the harness restores a record (Restore).
	Ver  *int64 `json:"ver"`
	mark time.Time
}

// ModelAPI serves a Scenario over HTTP. Safe for concurrent use.
type ModelAPI struct {
	sc        Scenario
	mu        gosync.Mutex
	rng       *rand.Rand
	mrng      *rand.Rand    // mark behaviours: a source of their own
	recs      []ModelRecord // ordered by id
	clock     time.Time
	reqs      int // list requests seen
	resps     int // successful list responses
	mutations int // mutations made so far
	ver       int
	// served maps a request's position (the value of its page, offset,
	// cursor or since parameter; "" for none) to the id sets served there.
	served map[string][][]int
	h      hostileState
}

// modelMarkLayout is how the model API writes marks: UTC, milliseconds.
const modelMarkLayout = "2006-01-02T15:04:05.000Z07:00"

// NewModelAPI builds the scenario's initial data set. Its marks are on the
// real clock, as an API's are: the initial records a second apart, ending a
// minute ago; every later change is stamped now (and after the one before).
func NewModelAPI(sc Scenario) *ModelAPI {
	m := &ModelAPI{sc: sc, rng: rand.New(rand.NewSource(sc.Seed ^ 0x5eed)), mrng: rand.New(rand.NewSource(sc.Seed ^ 0x7469))}
	m.initHostile()
	m.clock = time.Now().UTC().Add(-time.Minute - time.Duration(sc.N)*time.Second).Truncate(time.Second)
	tie := 0 // records left in the current group sharing one mark
	for i := 1; i <= sc.N; i++ {
		if tie > 0 {
			tie--
		} else {
			m.clock = m.clock.Add(time.Second)
			if sc.Has("ties") && m.mrng.Intn(2) == 0 {
				// At most size-1 records share a mark: an hwm page of one mark
				// only cannot progress (docs/pagination.md, "hwm").
				tie = m.mrng.Intn(min(4, sc.Size-1))
			}
		}
		m.recs = append(m.recs, m.stamp(i))
	}
	if sc.Has("future") {
		for k := 0; k < 1+m.mrng.Intn(3); k++ {
			i := m.mrng.Intn(len(m.recs))
			at := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
			if m.mrng.Intn(2) == 0 {
				at = m.clock.AddDate(0, 0, 1+m.mrng.Intn(400))
			}
			m.recs[i].UpdatedAt, m.recs[i].mark = m.form(at)
		}
	}
	return m
}

// modelMarkForms are the forms of markforms scenarios: whole seconds,
// milliseconds, microseconds, and an offset.
var modelMarkForms = []struct {
	layout string
	zone   *time.Location
}{
	{"2006-01-02T15:04:05Z07:00", time.UTC},
	{"2006-01-02T15:04:05.000Z07:00", time.UTC},
	{"2006-01-02T15:04:05.000000Z07:00", time.UTC},
	{"2006-01-02T15:04:05.000Z07:00", time.FixedZone("", 2*3600)},
}

// form writes a mark as the API does, and returns the instant the text
// says (a form with fewer digits cuts the clock's).
func (m *ModelAPI) form(at time.Time) (string, time.Time) {
	text := at.Format(modelMarkLayout)
	if m.sc.Has("markforms") {
		f := modelMarkForms[m.mrng.Intn(len(modelMarkForms))]
		text = at.In(f.zone).Format(f.layout)
	}
	t, _ := time.Parse(time.RFC3339Nano, text)
	return text, t
}

// newRecord is a new version of record id, stamped now.
func (m *ModelAPI) newRecord(id int) ModelRecord {
	if now := time.Now().UTC().Truncate(time.Millisecond); now.After(m.clock) {
		m.clock = now
	} else {
		m.clock = m.clock.Add(time.Millisecond)
	}
	if m.sc.Has("markforms") {
		// A form in whole seconds must not write a change before the one
		// it follows: the clock moves on to the next whole second.
		if c := m.clock.Truncate(time.Second); !c.Equal(m.clock) {
			m.clock = c.Add(time.Second)
		}
	}
	return m.stamp(id)
}

// stamp is a new version of record id at the API's clock.
func (m *ModelAPI) stamp(id int) ModelRecord {
	m.ver++
	text, mark := m.form(m.clock)
	ver := int64(m.ver)
	return ModelRecord{ID: id, V: fmt.Sprintf("v%d", m.ver), UpdatedAt: text, Ver: &ver, mark: mark}
}

// Snapshot returns the current data set by id.
func (m *ModelAPI) Snapshot() map[int]ModelRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]ModelRecord, len(m.recs))
	for _, r := range m.recs {
		out[r.ID] = r
	}
	return out
}

// Delete removes the records with the given ids (between runs: a test's
// own deletions) and returns how many it removed.
func (m *ModelAPI) Delete(ids ...int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, id := range ids {
		for i, r := range m.recs {
			if r.ID == id {
				m.recs = append(m.recs[:i], m.recs[i+1:]...)
				m.removedNow(id)
				n++
				break
			}
		}
	}
	return n
}

// Requests returns how many list requests the API has seen.
func (m *ModelAPI) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs
}

func (m *ModelAPI) mutate() {
	if m.sc.Has("deletes") && len(m.recs) > 1 && m.rng.Intn(3) == 0 {
		i := m.rng.Intn(len(m.recs))
		m.removedNow(m.recs[i].ID)
		m.recs = append(m.recs[:i], m.recs[i+1:]...)
		return
	}
	if m.sc.Has("appends") && (!m.sc.Has("updates") || m.rng.Intn(2) == 0) {
		m.recs = append(m.recs, m.newRecord(m.recs[len(m.recs)-1].ID+1))
		return
	}
	if m.sc.Has("updates") || m.sc.Has("deletes") {
		i := m.rng.Intn(len(m.recs))
		m.recs[i] = m.newRecord(m.recs[i].ID)
	}
}

// mutating reports whether the scenario changes its data set during walks.
func (m *ModelAPI) mutating() bool {
	return m.sc.Has("updates") || m.sc.Has("appends") || m.sc.Has("deletes")
}

// ServeHTTP answers every list request in the scenario's style.
func (m *ModelAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.URL.Path == "/other" {
		m.serveOther(w)
		return
	}
	m.reqs++
	if m.sc.Has("transient") && m.rng.Intn(100) < m.sc.FaultPct {
		if m.rng.Intn(2) == 0 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	if m.sc.Has("redirect") && r.URL.Path != "/moved" && m.rng.Intn(100) < m.sc.FaultPct {
		u := *r.URL
		u.Path = "/moved"
		http.Redirect(w, r, u.String(), http.StatusTemporaryRedirect)
		return
	}
	if m.hostileFault(w, r) {
		return
	}
	body, err := m.page(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.hostilePage(r, body)
	m.resps++
	m.record(r, body["data"].([]ModelRecord))
	// Mutations stop after ModelMutationBudget of them: a source that
	// changes on every request forever gives a walk no end to prove.
	if m.mutating() && m.resps%m.sc.MutEvery == 0 && m.mutations < ModelMutationBudget {
		m.mutations++
		m.mutate()
	}
	if link, ok := body["_link"].(string); ok {
		w.Header().Set("Link", link)
		delete(body, "_link")
	}
	if next, ok := body["_next"].(string); ok {
		w.Header().Set("X-Next-Cursor", next)
		delete(body, "_next")
	}
	if n, ok := body["_total"].(int); ok {
		w.Header().Set("X-Total-Count", strconv.Itoa(n))
		delete(body, "_total")
	}
	w.Header().Set("Content-Type", "application/json")
	raw, _ := json.Marshal(body)
	if m.sc.Has("truncated") && m.rng.Intn(100) < m.sc.FaultPct {
		raw = raw[:len(raw)/2] // a 200 whose body stops half way
	}
	_, _ = w.Write(raw)
}

// ModelMutationBudget bounds the mutations of one scenario's data set.
const ModelMutationBudget = 40

// page serves one page of the scenario's records for request r: the
// records the request's position selects (window), with the scenario's
// page faults applied (pageFaults) and its style's pagination fields
// (pageMeta).
func (m *ModelAPI) page(r *http.Request) (map[string]any, error) {
	q := r.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 {
		return nil, fmt.Errorf("bad limit %q", q.Get("limit"))
	}
	served := limit
	if m.sc.Has("caps") && served > m.sc.Cap {
		served = m.sc.Cap
	}
	list, start, err := m.window(q, limit)
	if err != nil {
		return nil, err
	}
	start = min(start, len(list))
	end := min(start+served, len(list))
	data := slices_clone(list[start:end])
	more := end < len(list)
	data = m.pageFaults(data, more)
	out := map[string]any{"data": data}
	m.pageMeta(out, r, data, len(list), limit, more)
	return out, nil
}

// window returns the records the request's filter leaves (hwm and
// incremental: those at or after since) and where in them its position
// starts.
func (m *ModelAPI) window(q url.Values, limit int) ([]ModelRecord, int, error) {
	list := m.recs
	since := func() (string, time.Time, error) {
		s := q.Get("since")
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return "", t, fmt.Errorf("bad since %q", s)
		}
		return s, t, nil
	}
	switch m.sc.Style {
	case "hwm":
		list = slices_sortedByMark(m.recs)
		start := 0
		if q.Get("since") != "" {
			s, t, err := since()
			if err != nil {
				return nil, 0, err
			}
			for start < len(list) && m.before(list[start], s, t) {
				start++
			}
		}
		return list, start, nil
	case "offset", "offset-total":
		start, _ := strconv.Atoi(q.Get("offset"))
		return list, start, nil
	case "cursor", "cursor-url", "cursor-header", "link":
		if q.Get("since") != "" { // incremental: records updated since
			s, t, err := since()
			if err != nil {
				return nil, 0, err
			}
			list = slices.DeleteFunc(slices_clone(list), func(r ModelRecord) bool { return m.before(r, s, t) })
		}
		if u := q.Get("until"); u != "" { // windows: records updated before
			t, err := time.Parse(time.RFC3339Nano, u)
			if err != nil {
				return nil, 0, fmt.Errorf("bad until %q", u)
			}
			list = slices.DeleteFunc(slices_clone(list), func(r ModelRecord) bool { return !m.before(r, u, t) })
		}
		if c := q.Get("cursor"); c != "" {
			after, err := strconv.Atoi(c)
			if err != nil {
				return nil, 0, fmt.Errorf("bad cursor %q", c)
			}
			return list, sort.Search(len(list), func(i int) bool { return list[i].ID > after }), nil
		}
		return list, 0, nil
	}
	p, err := strconv.Atoi(q.Get("page"))
	if err != nil || p < 1 {
		p = 1
	}
	return list, (p - 1) * limit, nil // the API numbers pages by the size asked for
}

// before reports whether record r lies before the since parameter s (t
// parsed): by instant, or by text when the API compares strings.
func (m *ModelAPI) before(r ModelRecord, s string, t time.Time) bool {
	if m.sc.Has("strcmp") {
		return r.UpdatedAt < s
	}
	return r.mark.Before(t)
}

func slices_clone(in []ModelRecord) []ModelRecord { return append([]ModelRecord{}, in...) }

func slices_sortedByMark(in []ModelRecord) []ModelRecord {
	out := slices_clone(in)
	sort.Slice(out, func(i, j int) bool {
		if !out[i].mark.Equal(out[j].mark) {
			return out[i].mark.Before(out[j].mark)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (m *ModelAPI) record(r *http.Request, data []ModelRecord) {
	q := r.URL.Query()
	pos := q.Get("page") + q.Get("offset") + q.Get("cursor")
	if m.sc.Style == "hwm" {
		pos = q.Get("since")
	}
	ids := make([]int, len(data))
	for i, d := range data {
		ids[i] = d.ID
	}
	if m.served == nil {
		m.served = map[string][][]int{}
	}
	m.served[pos] = append(m.served[pos], ids)
	if q.Has("page") { // also by page and size asked, as a sync that adapted to a cap asks
		k := pos + "@" + q.Get("limit")
		m.served[k] = append(m.served[k], ids)
	}
}

// ServedEverywhere returns the ids that every response served at position
// pos contained, and whether pos was ever served. With updates in place and
// appends only (no deletes), any response a sync committed at pos holds them.
func (m *ModelAPI) ServedEverywhere(pos string) ([]int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sets, ok := m.served[pos]
	if !ok {
		return nil, false
	}
	count := map[int]int{}
	for _, set := range sets {
		seen := map[int]bool{}
		for _, id := range set {
			if !seen[id] {
				seen[id] = true
				count[id]++
			}
		}
	}
	var out []int
	for id, n := range count {
		if n == len(sets) {
			out = append(out, id)
		}
	}
	sort.Ints(out)
	return out, true
}
