package fakeapi

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
)

// ModelStyles are the pagination styles a model scenario may serve.
var ModelStyles = []string{"page", "page-total", "page-has-more", "page-count", "offset", "cursor", "cursor-url", "cursor-header", "link", "hwm"}

// noneOneIn: one scenario in noneOneIn (drawn from a random source of its
// own, so that every other seed stays as it was) has a job of style none
// over the paginated list, whose pages carry has_more: a run must never
// complete it while the list has more (docs/guarantees.md).
const noneOneIn = 12

// ModelBehaviours are the behaviour kinds a scenario may compose; a test
// may exclude some by name (see NewScenario).
var ModelBehaviours = append(append([]string{}, walkBehaviours...), markBehaviours...)

// walkBehaviours shape the walk; markBehaviours the marks of the records
// (they apply to hwm walks and incremental windows only). Mark behaviours
// are drawn from a random source of their own, so that adding them left
// every seed's walk as it was.
var (
	walkBehaviours = []string{"caps", "shortpage", "emptypage", "updates", "appends", "transient", "deletes", "dupkeys", "truncated", "redirect", "incremental"}
	markBehaviours = []string{"ties", "markforms", "strcmp", "future"}
)

// Scenario is one seeded test case: a data set, a pagination style, a page
// size and a composition of behaviours, each with its own parameters.
type Scenario struct {
	Seed       int64
	Style      string
	N          int      // records at the start
	Size       int      // page size the job asks for
	Behaviours []string // enabled behaviour kinds, in ModelBehaviours order
	Cap        int      // caps: the API serves at most Cap records per page
	ShortAt    int      // shortpage/emptypage: the list request number that comes back short
	MutEvery   int      // updates/appends: a mutation after every MutEvery list responses
	FaultPct   int      // transient, truncated, redirect: percent of list requests affected
	// Concurrency is source.concurrency: pages in flight for page and
	// offset walks (1 for the others, which cannot walk ahead).
	Concurrency int
	// Windows (incremental scenarios only): the run's window split into
	// windows of Step seconds (incremental.step, with end_param), Windows
	// of them walked at once; 0 = not split.
	Step, Windows int
	// Deletes is the job's target.deletes (keep, soft or hard), drawn from
	// a random source of its own so that every seed's walk stays as it was.
	Deletes string
	// Hostiles are the hostile kinds enabled (HostileKinds order), drawn
	// by NewHostileScenario only.
	Hostiles []string
}

// FullPasses reports whether every run of the scenario's job is a full pass
// (docs/deletions.md, "Full passes"): neither incremental nor hwm.
func (s Scenario) FullPasses() bool { return !s.Has("incremental") && s.Style != "hwm" }

// Has reports whether the scenario enables behaviour kind b.
func (s Scenario) Has(b string) bool { return slices.Contains(s.Behaviours, b) }

// PositionStable reports whether the style addresses pages by position
// (page number or offset), so that only mutations that keep every record's
// position may run during a walk: updates in place and appends at the end.
func (s Scenario) PositionStable() bool {
	return strings.HasPrefix(s.Style, "page") || strings.HasPrefix(s.Style, "offset")
}

// counted reports whether the job configures a signal (total_pages,
// has_more, total) that can contradict a short or empty page.
func (s Scenario) counted() bool {
	return s.Style == "none" || s.Style == "page-total" || s.Style == "page-has-more" || s.Style == "page-count" || strings.HasPrefix(s.Style, "offset")
}

// keyed reports whether the style carries its position in the response (a
// cursor, a next URL, a Link header or a mark), so that records deleted
// during a walk shift nothing and a page may hold more records than asked.
func (s Scenario) keyed() bool {
	return strings.HasPrefix(s.Style, "cursor") || s.Style == "link" || s.Style == "hwm"
}

// survivable reports whether idemsync's rules (docs/pagination.md) let a job of
// this style get through behaviour b without a hole: a short page or a page cap
// is only detectable where the job has a counting signal (or, for caps, a
// cursor that carries the position); hwm and plain page walks end on a short
// page by contract.
func (s Scenario) survivable(b string) bool {
	switch b {
	case "shortpage", "emptypage":
		return s.counted()
	case "caps":
		return s.counted() || strings.HasPrefix(s.Style, "cursor") || s.Style == "link"
	case "deletes":
		// Deleting a record shifts every later page of a page or offset walk:
		// no walk by position can prove it read a record that moved back
		// across its boundary (docs/guarantees.md).
		return s.keyed()
	case "dupkeys":
		// A repeated record makes a page longer than asked, which a walk
		// by position would take for a lost record.
		return s.keyed()
	case "incremental":
		// An incremental window over a walk by position shifts when a
		// record updated during the run enters it (docs/guarantees.md);
		// hwm is a walk by the mark itself.
		return s.keyed() && s.Style != "hwm"
	case "future":
		// With an upper bound (windows), a record dated after the run's
		// start is left to a later run by design: no claim to check.
		return (s.Style == "hwm" || s.Has("incremental")) && s.Step == 0
	case "markforms":
		// A form in whole seconds stamps a change up to a second after it
		// happened: a run bounded by its start (windows) leaves such a
		// record to the next run by design (docs/guarantees.md), which the
		// invariant, taken at the run's start, would call a hole.
		return (s.Style == "hwm" || s.Has("incremental")) && s.Step == 0
	case "ties", "strcmp":
		// Marks matter only where the job keeps one.
		return s.Style == "hwm" || s.Has("incremental")
	}
	return true
}

// NewScenario derives a scenario from seed; behaviour kinds in skip are never
// enabled. The same seed and skip set always give the same scenario.
func NewScenario(seed int64, skip map[string]bool) Scenario {
	rng := rand.New(rand.NewSource(seed))
	s := Scenario{Seed: seed}
	s.Style = ModelStyles[rng.Intn(len(ModelStyles))]
	s.N = 20 + rng.Intn(281)
	s.Size = 5 + rng.Intn(46)
	for _, b := range walkBehaviours {
		if rng.Intn(3) == 0 && !skip[b] && s.survivable(b) {
			s.Behaviours = append(s.Behaviours, b)
		}
	}
	s.Cap = 1 + rng.Intn(s.Size)
	if s.Cap >= s.Size {
		s.Cap = s.Size - 1
	}
	s.ShortAt = 1 + rng.Intn(1+s.N/s.Size)
	s.MutEvery = 1 + rng.Intn(4)
	s.FaultPct = 5 + rng.Intn(20)
	s.Concurrency = 1
	if s.PositionStable() && rng.Intn(2) == 0 {
		s.Concurrency = 2 + rng.Intn(3)
	}
	if wrng := rand.New(rand.NewSource(seed ^ 0x77696e64)); s.Has("incremental") && !skip["windows"] && wrng.Intn(2) == 0 {
		s.Step, s.Windows = 15+wrng.Intn(120), 1+wrng.Intn(4)
	}
	s.Deletes = []string{"keep", "soft", "hard"}[rand.New(rand.NewSource(seed^0x64656c)).Intn(3)]
	if skip["sweeps"] {
		s.Deletes = "keep"
	}
	if rand.New(rand.NewSource(seed^0x6e6f6e65)).Intn(noneOneIn) == 0 {
		s.Style, s.Concurrency, s.Step, s.Windows = "none", 1, 0, 0
		s.Behaviours = slices.DeleteFunc(s.Behaviours, func(b string) bool { return !s.survivable(b) })
	}
	mrng := rand.New(rand.NewSource(seed ^ 0x6d61726b))
	for _, b := range markBehaviours {
		// A string-comparing server needs marks of one form, so strcmp
		// and markforms never go together.
		if mrng.Intn(2) == 0 && !skip[b] && s.survivable(b) && !(b == "strcmp" && s.Has("markforms")) {
			s.Behaviours = append(s.Behaviours, b)
		}
	}
	return s
}

// String is a one-line human description of the scenario.
func (s Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s, %d records, size %d", s.Seed, s.Style, s.N, s.Size)
	if s.Concurrency > 1 {
		fmt.Fprintf(&b, ", %d pages in flight", s.Concurrency)
	}
	if s.Deletes != "keep" {
		fmt.Fprintf(&b, ", deletes: %s", s.Deletes)
	}
	for _, k := range s.Behaviours {
		switch k {
		case "caps":
			fmt.Fprintf(&b, ", API caps pages at %d", s.Cap)
		case "shortpage":
			fmt.Fprintf(&b, ", list request %d short while more remain", s.ShortAt)
		case "emptypage":
			fmt.Fprintf(&b, ", list request %d empty while more remain", s.ShortAt)
		case "updates":
			fmt.Fprintf(&b, ", an update every %d responses", s.MutEvery)
		case "appends":
			fmt.Fprintf(&b, ", an append every %d responses", s.MutEvery)
		case "transient":
			fmt.Fprintf(&b, ", %d%% 429/503", s.FaultPct)
		case "deletes":
			fmt.Fprintf(&b, ", a delete every %d responses", s.MutEvery)
		case "dupkeys":
			b.WriteString(", pages repeat a record")
		case "truncated":
			fmt.Fprintf(&b, ", %d%% truncated bodies", s.FaultPct)
		case "redirect":
			fmt.Fprintf(&b, ", %d%% same-origin 307 redirects", s.FaultPct)
		case "incremental":
			b.WriteString(", incremental on updated_at")
			if s.Step > 0 {
				fmt.Fprintf(&b, " in windows of %ds, %d at once", s.Step, s.Windows)
			}
		case "ties":
			b.WriteString(", records share marks (ties across page boundaries)")
		case "markforms":
			b.WriteString(", marks in mixed forms (…00Z, …00.000Z, …00.123456Z, +02:00)")
		case "strcmp":
			b.WriteString(", the API compares since as a string")
		case "future":
			b.WriteString(", records dated in the future")
		}
	}
	b.WriteString(s.hostileString())
	return b.String()
}
