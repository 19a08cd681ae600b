package fakeapi

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strings"
)

// HostileKinds are the behaviour kinds of a source that misbehaves against
// deletions (issue 22 of the project's tracker, docs/fault-tolerance.md):
// each is off unless a test enables it by name (NewHostileScenario), so a
// kind can be switched on once idemsync survives it.
//
//   - shift: an offset walk with `total:` whose page now and then silently
//     omits one record; the next offset then serves a record twice and the
//     served count still equals the total.
//   - keyswap: between two passes the API starts serving every record under
//     another key (id+SwapOffset) for one whole pass; the data set itself is
//     unchanged.
//   - versionback: deletes: soft with target.version; a record swept earlier
//     comes back with a lower or a null version.
//   - boundmove: an incremental job with end_param whose every run is a full
//     pass (full_every), records updated during the walk: an update moves a
//     record past the run's fixed upper bound.
//   - nullerror: mid-walk, a 200 whose records are null next to an error
//     object.
//   - gqlerrors: a POST job with a persisted GraphQL query (no `query`), and
//     mid-walk a 200 with a top-level `errors` array and partial data that
//     looks like the last page.
//   - sharedtable: a second job file (other.yaml) writes the same table from
//     a source of its own, with the same target.deletes.
var HostileKinds = []string{"shift", "keyswap", "versionback", "boundmove", "nullerror", "gqlerrors", "sharedtable"}

// SwapOffset is what keyswap adds to every id it serves.
const SwapOffset = 100000

// OtherFirstID is the first id of the sharedtable source (/other).
const OtherFirstID = 900001

// hostileFaultBudget bounds each fault kind (shift, nullerror, gqlerrors) to
// a few responses per scenario, so that a source that is healthy afterwards
// lets every correct binary complete.
const hostileFaultBudget = 3

// NewHostileScenario is NewScenario with the hostile kinds in enabled drawn
// per seed (each with probability 2/3) and the scenario adjusted to them
// (a style, deletes, behaviours they need). Every kind's draw is taken
// whether or not it is enabled, so that enabling one more kind leaves the
// draws of the others as they were.
func NewHostileScenario(seed int64, skip, enabled map[string]bool) Scenario {
	s := NewScenario(seed, skip)
	hrng := rand.New(rand.NewSource(seed ^ 0x686f7374))
	rolls := make([]int, len(HostileKinds))
	for i := range rolls {
		rolls[i] = hrng.Intn(3)
	}
	for i, k := range HostileKinds {
		if enabled[k] && rolls[i] != 0 && s.applyHostile(k) {
			s.Hostiles = append(s.Hostiles, k)
		}
	}
	if len(s.Hostiles) > 0 && s.Deletes == "keep" && !s.IsHostile("versionback") {
		s.Deletes = []string{"soft", "hard"}[hrng.Intn(2)]
	}
	return s
}

// IsHostile reports whether the scenario enables hostile kind k.
func (s Scenario) IsHostile(k string) bool { return slices.Contains(s.Hostiles, k) }

// applyHostile adjusts the scenario to hostile kind k and reports whether
// the two fit (a kind that needs another style than one already forced is
// left out).
func (s *Scenario) applyHostile(k string) bool {
	if s.Style == "none" {
		return false // its runs refuse the paginated list: nothing to be hostile to
	}
	switch k {
	case "shift":
		s.Style = "offset-total"
		s.dropBehaviour("incremental")
		s.Step, s.Windows = 0, 0
	case "keyswap", "versionback":
		if !s.FullPasses() {
			return false
		}
		if k == "versionback" {
			s.Deletes = "soft"
		}
	case "boundmove":
		if s.IsHostile("shift") || s.IsHostile("keyswap") || s.IsHostile("versionback") {
			return false // those need full passes of a non-incremental job
		}
		if !s.keyed() || s.Style == "hwm" {
			s.Style = "cursor"
		}
		s.Concurrency = 1
		s.Step, s.Windows = 0, 0
		for _, b := range []string{"incremental", "updates"} {
			if !s.Has(b) {
				s.Behaviours = append(s.Behaviours, b)
			}
		}
		// A run bounded by its start leaves records dated after it (and
		// changes stamped in whole seconds) to the next run by design
		// (survivable: the same as windows): no claim the model can check.
		s.dropBehaviour("future")
		s.dropBehaviour("markforms")
	}
	// Keep only the behaviours the (new) style survives.
	s.Behaviours = slices.DeleteFunc(s.Behaviours, func(b string) bool { return !s.survivable(b) })
	if !s.PositionStable() {
		s.Concurrency = 1
	}
	return true
}

func (s *Scenario) dropBehaviour(b string) {
	s.Behaviours = slices.DeleteFunc(s.Behaviours, func(x string) bool { return x == b })
}

// hostileString describes the scenario's hostile kinds for String.
func (s Scenario) hostileString() string {
	var b strings.Builder
	for _, k := range s.Hostiles {
		switch k {
		case "shift":
			b.WriteString(", HOSTILE shift: offset pages that omit a record while total is reported")
		case "keyswap":
			fmt.Fprintf(&b, ", HOSTILE keyswap: whole passes served under ids+%d", SwapOffset)
		case "versionback":
			b.WriteString(", HOSTILE versionback: swept records come back with a lower or null target.version")
		case "boundmove":
			b.WriteString(", HOSTILE boundmove: every run a full pass bounded by end_param, updates during it")
		case "nullerror":
			b.WriteString(`, HOSTILE nullerror: mid-walk 200 {"data": null, "error": {...}}`)
		case "gqlerrors":
			b.WriteString(", HOSTILE gqlerrors: persisted-query POST, mid-walk 200 with errors and partial data")
		case "sharedtable":
			b.WriteString(", HOSTILE sharedtable: a second job writes the same table")
		}
	}
	return b.String()
}

// hostileState is a ModelAPI's hostile side: its own random source (so
// that every other behaviour's draws stay as they were), the faults served
// per kind, the key swap, the other job's records, and the log of removals
// that AbsentSince reads.
type hostileState struct {
	rng     *rand.Rand
	faults  map[string]int
	swapped bool
	other   []ModelRecord
	seq     int         // removal events so far
	removed map[int]int // id → seq of its latest removal
}

// Presence is which records the data set held at one moment (and how many
// removals had happened by then), for AbsentSince.
type Presence struct {
	seq int
	ids map[int]bool
}

// Presence returns the data set's presence now.
func (m *ModelAPI) Presence() Presence {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := Presence{seq: m.h.seq, ids: map[int]bool{}}
	for _, r := range m.recs {
		p.ids[r.ID] = true
	}
	for _, r := range m.h.other {
		p.ids[r.ID] = true
	}
	return p
}

// AbsentSince reports whether record id was absent from the data set (the
// records the source holds, not what it served) at some moment from p up to
// now: absent at p, removed since, or absent now.
func (m *ModelAPI) AbsentSince(p Presence, id int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !p.ids[id] || m.h.removed[id] > p.seq {
		return true
	}
	for _, r := range m.h.other {
		if r.ID == id {
			return false
		}
	}
	_, ok := slices.BinarySearchFunc(m.recs, id, func(r ModelRecord, id int) int { return r.ID - id })
	return !ok
}

// removedNow logs the removal of record id. The caller holds m.mu.
func (m *ModelAPI) removedNow(id int) {
	m.h.seq++
	if m.h.removed == nil {
		m.h.removed = map[int]int{}
	}
	m.h.removed[id] = m.h.seq
}

// SetSwap turns keyswap's swapped keys on or off (the harness does it
// between passes).
func (m *ModelAPI) SetSwap(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.h.swapped = on
}

// Restore puts records back (after a sweep), each with a new value and a
// version lower than any served (1) or, when null, none.
func (m *ModelAPI) Restore(null bool, ids ...int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		r := m.newRecord(id)
		r.Ver = nil
		if !null {
			one := int64(1)
			r.Ver = &one
		}
		i, ok := slices.BinarySearchFunc(m.recs, id, func(r ModelRecord, id int) int { return r.ID - id })
		if ok {
			m.recs[i] = r
		} else {
			m.recs = slices.Insert(m.recs, i, r)
		}
	}
}

// hostileFault answers a mid-walk request with nullerror's 200 and reports
// whether it did. The caller holds m.mu.
func (m *ModelAPI) hostileFault(w http.ResponseWriter, r *http.Request) bool {
	if !m.sc.IsHostile("nullerror") || !midWalk(r) || !m.hostileRoll("nullerror", 5) {
		return false
	}
	m.record(r, nil) // a position served with no record
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"data": null, "error": {"code": "backend_unavailable", "message": "the list could not be read, try again"}}`))
	return true
}

// hostilePage applies shift, gqlerrors and keyswap to a page about to be
// served. The caller holds m.mu.
func (m *ModelAPI) hostilePage(r *http.Request, body map[string]any) {
	data := body["data"].([]ModelRecord)
	if m.sc.IsHostile("shift") && len(data) > 1 && midWalk(r) && m.hostileRoll("shift", 4) {
		// One record silently left out; total stays the data set's size,
		// so the next offset (this one + records served) repeats a record.
		k := m.h.rng.Intn(len(data) - 1)
		data = slices.Delete(slices_clone(data), k, k+1)
	}
	if m.sc.IsHostile("gqlerrors") && len(data) > 1 && midWalk(r) && m.hostileRoll("gqlerrors", 5) {
		// Partial data: the first half of the page, and the page's meta as
		// if it were the last one (GraphQL's pageInfo of a failed field).
		data = data[:len(data)/2]
		for _, k := range []string{"meta", "next_cursor", "next", "_next", "_link", "has_more", "total", "_total"} {
			delete(body, k)
		}
		m.pageMeta(body, r, data, len(data), len(data), false)
		body["errors"] = []map[string]any{{"message": "upstream timeout resolving items", "path": []any{"items", len(data)}}}
	}
	if m.h.swapped {
		data = slices_clone(data)
		for i := range data {
			data[i].ID += SwapOffset
		}
	}
	body["data"] = data
}

// hostileRoll reports, with a chance of one in n and within the kind's
// budget, whether fault kind k strikes now. The caller holds m.mu.
func (m *ModelAPI) hostileRoll(k string, n int) bool {
	if m.h.faults[k] >= hostileFaultBudget || m.h.rng.Intn(n) != 0 {
		return false
	}
	if m.h.faults == nil {
		m.h.faults = map[string]int{}
	}
	m.h.faults[k]++
	return true
}

// midWalk reports whether r asks for a page after the first.
func midWalk(r *http.Request) bool {
	q := r.URL.Query()
	p := q.Get("page")
	return (p != "" && p != "1") || (q.Get("offset") != "" && q.Get("offset") != "0") || q.Get("cursor") != ""
}

// serveOther serves the sharedtable job's records, all on one page.
func (m *ModelAPI) serveOther(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	raw, _ := json.Marshal(map[string]any{"data": m.h.other})
	_, _ = w.Write(raw)
}

// initHostile sets up the hostile side of a new ModelAPI.
func (m *ModelAPI) initHostile() {
	m.h.rng = rand.New(rand.NewSource(m.sc.Seed ^ 0x6873))
	if m.sc.IsHostile("sharedtable") {
		for i := 0; i < 5+m.h.rng.Intn(11); i++ {
			m.h.other = append(m.h.other, ModelRecord{ID: OtherFirstID + i, V: fmt.Sprintf("o%d", i), UpdatedAt: "2024-01-01T00:00:00.000Z"})
		}
	}
}
