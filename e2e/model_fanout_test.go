package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

var (
	fanoutSeeds        = flag.Int("fanout-seeds", envInt("IDEMSYNC_MODEL_FANOUT_SEEDS", 8), "fan-out model test: how many seeds to run (also IDEMSYNC_MODEL_FANOUT_SEEDS)")
	fanoutHostileSeeds = flag.Int("fanout-hostile-seeds", envInt("IDEMSYNC_MODEL_FANOUT_HOSTILE_SEEDS", 20), "fan-out model test: how many seeds TestModelFanoutHostile runs (also IDEMSYNC_MODEL_FANOUT_HOSTILE_SEEDS)")
	fanoutPGSeeds      = flag.Int("fanout-pg-seeds", envInt("IDEMSYNC_MODEL_FANOUT_PG_SEEDS", 3), "fan-out model test: how many seeds TestModelFanoutPostgres runs (also IDEMSYNC_MODEL_FANOUT_PG_SEEDS)")
)

// envInt is the integer in environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// fanoutScenario is one seeded two-level case: a shop, a parent + child
// job, and the behaviours it composes.
type fanoutScenario struct {
	Seed                    int64
	Parents, MaxChildren    int
	ParentSize, ChildSize   int
	ParentStyle, ChildStyle string
	Fanout                  int
	ParentRows              string
	// Incremental makes the parent resource incremental on updated_at
	// (cursor style, with an overlap that covers every change a scenario
	// makes: a walk by id misses a parent changed behind its cursor, and a
	// later run must still see it). Rows the overlap reads again are
	// unchanged, so they must not start child walks.
	Incremental bool
	FaultPct    int  // percent of requests answered 503 (0: none)
	Mutations   bool // the shop changes between invocations
	// Deletes is order_items' target.deletes ("" keeps the default,
	// keep): hard in some scenarios walking every parent, whose every
	// run is a full pass; children are then also deleted at the source.
	Deletes string
	// ParentDeletes is orders' target.deletes ("" keeps the default).
	ParentDeletes string
	// Hostiles are the hostile kinds drawn (fanoutHostileKinds).
	Hostiles []string
}

// IsHostile reports whether the scenario enables hostile kind k.
func (sc fanoutScenario) IsHostile(k string) bool { return slices.Contains(sc.Hostiles, k) }

// newFanoutScenario derives a scenario from seed.
func newFanoutScenario(seed int64) fanoutScenario {
	rng := rand.New(rand.NewSource(seed ^ 0x6661))
	pick := func(opts ...string) string { return opts[rng.Intn(len(opts))] }
	sc := fanoutScenario{
		Seed:        seed,
		Parents:     3 + rng.Intn(35),
		MaxChildren: 1 + rng.Intn(15),
		ParentSize:  3 + rng.Intn(8),
		ChildSize:   2 + rng.Intn(5),
		ParentStyle: pick("page", "cursor"),
		ChildStyle:  pick("page", "cursor"),
		Fanout:      1 + rng.Intn(4),
		ParentRows:  pick("changed", "changed", "all"),
		Incremental: rng.Intn(3) == 0,
		Mutations:   rng.Intn(4) != 0,
	}
	if rng.Intn(3) == 0 {
		sc.FaultPct = 5 + rng.Intn(11)
	}
	if sc.Incremental {
		sc.ParentStyle = "cursor"
	}
	// Drawn from a source of its own, so that every other seed's scenario
	// stays as it was.
	if drng := rand.New(rand.NewSource(seed ^ 0x64656c)); sc.ParentRows == "all" && sc.Mutations && drng.Intn(2) == 0 {
		sc.Deletes = "hard"
	}
	return sc
}

func (sc fanoutScenario) String() string {
	s := fmt.Sprintf("seed %d: %d orders (%s, pages of %d) with 0..%d items each (%s, pages of %d), fanout %d, parent_rows %s",
		sc.Seed, sc.Parents, sc.ParentStyle, sc.ParentSize, sc.MaxChildren, sc.ChildStyle, sc.ChildSize, sc.Fanout, sc.ParentRows)
	if sc.Incremental {
		s += ", orders incremental (overlap 1h)"
	}
	if sc.FaultPct > 0 {
		s += fmt.Sprintf(", %d%% 503", sc.FaultPct)
	}
	if sc.Mutations {
		s += ", changes between invocations"
	}
	if sc.Deletes != "" {
		s += ", order_items deletes: " + sc.Deletes + " (children deleted at the source too)"
	}
	if sc.ParentDeletes != "" {
		s += ", orders deletes: " + sc.ParentDeletes
	}
	for _, k := range sc.Hostiles {
		s += ", HOSTILE " + k
	}
	return s
}

// job is the scenario's job file.
func (sc fanoutScenario) job(api string, tgt shopTarget) string {
	return shopJob{api: api, target: tgt.url, schema: tgt.schema, parentStyle: sc.ParentStyle, childStyle: sc.ChildStyle,
		parentSize: sc.ParentSize, childSize: sc.ChildSize, parentRows: sc.ParentRows, fanout: sc.Fanout,
		incremental: sc.Incremental, overlap: "1h", deletes: sc.Deletes, parentDeletes: sc.ParentDeletes}.yaml()
}

// TestModelFanout extends TestModel to two-level jobs (orders → order_items):
// per seed a scenario, the real binary under a random schedule of runs,
// kills, slices and resumes with the shop changing between invocations,
// and the invariant checked after every exit: exit 0 with the job
// completed ⇒ both tables equal the source for every parent that did not
// change while the run was under way (all of them when nothing changed).
func TestModelFanout(t *testing.T) {
	runFanoutModel(t, *fanoutSeeds, func(t *testing.T) shopTarget { return sqliteTarget() })
}

// TestModelFanoutPostgres runs the first -fanout-pg-seeds seeds of
// TestModelFanout with a PostgreSQL target.
func TestModelFanoutPostgres(t *testing.T) {
	pg := postgresURL(t)
	runFanoutModel(t, *fanoutPGSeeds, func(t *testing.T) shopTarget { return postgresTarget(t, pg) })
}

// TestModelFanoutHostile runs -fanout-hostile-seeds seeds of the fan-out
// model with its hostile kinds drawn (parents deleted between and during
// child walks, --resource selections).
func TestModelFanoutHostile(t *testing.T) {
	runFanoutModelWith(t, *fanoutHostileSeeds, hostileOrAll(), func(t *testing.T) shopTarget { return sqliteTarget() })
}

func runFanoutModel(t *testing.T, n int, target func(t *testing.T) shopTarget) {
	runFanoutModelWith(t, n, modelHostile(), target)
}

func runFanoutModelWith(t *testing.T, n int, hostile map[string]bool, target func(t *testing.T) shopTarget) {
	checkHostileKinds(t)
	seeds := []int64{}
	if *modelSeed >= 0 {
		seeds = append(seeds, *modelSeed)
	} else {
		for i := 0; i < n; i++ {
			seeds = append(seeds, *modelSeedStart+int64(i))
		}
	}
	sum := &modelSummary{exits: map[string]int{}}
	t.Run("seeds", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				sc := newFanoutScenario(seed)
				sc.drawHostile(hostile)
				fanoutSeedRun(t, sc, sum, target(t))
			})
		}
	})
	sum.report(t)
}

// fanoutSeedRun drives one scenario until three completed invocations or
// the step budget.
func fanoutSeedRun(t *testing.T, sc fanoutScenario, sum *modelSummary, tgt shopTarget) {
	repro := fmt.Sprintf("go test ./e2e -run '%s$' -seed %d -v", strings.Split(t.Name(), "/")[0], sc.Seed) + modelHostileRepro()
	t.Log(sc.String())
	shop := fakeapi.NewShop(fakeapi.ShopOptions{Parents: sc.Parents, MaxChildren: sc.MaxChildren, Seed: sc.Seed})
	if sc.FaultPct > 0 {
		shop.SetFaults(fakeapi.Faults{Rate: float64(sc.FaultPct) / 100, Kinds: []string{fakeapi.Fault503}, Seed: sc.Seed, MaxConsecutive: 2})
	}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", sc.job(srv.URL, tgt))
	rng := rand.New(rand.NewSource(sc.Seed * 7907))
	hh := &fanoutHostileHarness{sc: sc, shop: shop, rng: rand.New(rand.NewSource(sc.Seed ^ 0x68617273))}
	guard := &fanoutGuard{shop: shop, from: shop.Presence()}
	exits := map[int]int{}
	defer func() { sum.mu.Lock(); sum.seeds++; sum.mu.Unlock() }()
	fail := func(format string, args ...any) {
		sum.mu.Lock()
		sum.failed++
		sum.failedSeeds = append(sum.failedSeeds, sc.Seed)
		sum.mu.Unlock()
		t.Errorf("%s: %s\nreproduce: %s", sc, fmt.Sprintf(format, args...), repro)
	}

	var start *fakeapi.ShopSnapshot // the data when the current chain of invocations began
	// pending holds the rows a completed invocation may leave although
	// the source lost their records: those the source held at any moment
	// of the previous chain of invocations, up to its completed one (its
	// pass may have seen them; a row goes at the second proving pass that
	// misses it, docs/deletions.md "Two passes"), and, after a pass that
	// skipped its sweep, those the pass before it allowed.
	pending := map[string]bool{}
	held := map[string]bool{} // the keys the source held during the current chain
	hold := func() {
		for k := range shopKeys(shop.Snapshot()) {
			held[k] = true
		}
	}
	completed := 0
	for step := 0; step < 40; step++ {
		if sc.Mutations && rng.Intn(100) < 30 {
			t.Logf("step %d: %s", step, fanoutMutate(rng, shop, sc))
		}
		if what := hh.between(); what != "" {
			t.Logf("step %d: %s", step, what)
		}
		if start == nil {
			snap := shop.Snapshot()
			start = &snap
		}
		hold()
		args, kill := fanoutStep(rng, shop, job)
		args, selected := hh.selection(args)
		hh.arm(t)
		ex := modelInvoke(t, dir, kill, args...)
		hold() // what a hostile source changed during the invocation
		status := fanoutStatus(ex.stdout)
		sum.exit(ex.code, ex.code == 0 && status != "completed")
		exits[ex.code]++
		if bad := guard.check(t, tgt, dir); len(bad) > 0 {
			fail("after %v (exit %d) a sweep broke its invariant: %d rows, e.g. %s\n%s", args, ex.code, len(bad), strings.Join(bad[:min(5, len(bad))], "; "), ex.stderr)
			return
		}
		switch {
		case selected && ex.code != 4 && ex.code != 130:
			// A selection is no completed job, and may be refused (a child
			// whose parent table does not exist yet fails with exit 1):
			// only the invariant above is claimed.
			t.Logf("selection %v: exit %d %s", args[1:3], ex.code, modelLastLine(ex.stderr))
		case ex.code == 0 && status == "completed":
			// This chain's pass may be the first to miss a key the source
			// held only during the chain (added, written, then deleted):
			// that row is pending too.
			allowed := maps.Clone(pending)
			maps.Copy(allowed, held)
			if bad := fanoutHoles(t, tgt, dir, *start, shop.Snapshot(), allowed); len(bad) > 0 {
				fail("exit 0 over a hole after %v (completed invocation %d): %d problems, e.g. %s\n%s",
					args, completed+1, len(bad), strings.Join(bad[:min(5, len(bad))], "; "), ex.stderr)
				return
			}
			if completed++; completed == 3 {
				return
			}
			if !strings.Contains(ex.stdout, `"sweep":"skipped"`) {
				pending = map[string]bool{}
			}
			for k := range held {
				pending[k] = true
			}
			held = map[string]bool{}
			start = nil
			guard.from = shop.Presence()
		case ex.code == 0 && status != "":
		case ex.code == -1, ex.code == 3:
			// A kill leaves the tables as they are; a transient failure
			// (retries exhausted) too. Neither may duplicate a key.
			fanoutHoles(t, tgt, dir, fakeapi.ShopSnapshot{}, fakeapi.ShopSnapshot{}, nil)
		case ex.code == 5 && args[0] == "resume":
		case ex.code == 4 && args[0] == "resume" && pgState():
			// The lease of a run killed just before still runs: resume
			// exits 4 (a run waits, testEnv), docs/operations.md.
		case ex.code == 4 && pgState() && strings.Contains(ex.stderr, "was lost; this process stops without writing"):
			// A holder that could not renew its lease in time (the test's
			// lease is short, testLease, and a loaded host starves the
			// renewal) stops without writing (docs/fault-tolerance.md): like a kill,
			// it leaves the tables as they are, the invariant above
			// checked, and may duplicate no key. The main model test
			// accepts exit 4 so too.
			t.Logf("lease lost: %s", modelLastLine(ex.stderr))
			fanoutHoles(t, tgt, dir, fakeapi.ShopSnapshot{}, fakeapi.ShopSnapshot{}, nil)
		case hh.refusedMassDelete(ex):
			// The refusal is the pass's end: every later pass refuses too.
			sum.mu.Lock()
			sum.refused++
			sum.mu.Unlock()
			t.Logf("refused: %s", modelLastLine(ex.stderr))
			return
		case hh.goneParent404(ex):
			t.Logf("a parent deleted at the source failed its child's walk: %s", modelLastLine(ex.stderr))
			fanoutHoles(t, tgt, dir, fakeapi.ShopSnapshot{}, fakeapi.ShopSnapshot{}, nil)
		default:
			fail("unexpected exit %d (status %q) after %v: %s\n%s", ex.code, status, args, modelLastLine(ex.stderr), ex.stderr)
			return
		}
	}
	if completed == 0 { // progress: see modelSeedRun
		fail("no progress: no completed invocation in 40 steps (exits %v)", exits)
		return
	}
	t.Logf("step budget spent after %d completed invocations", completed)
}

// fanoutStatus is the top-level "status" of a multi-resource --json
// object, "" when stdout holds none.
func fanoutStatus(stdout string) string {
	var v struct {
		Status    string            `json:"status"`
		Resources []json.RawMessage `json:"resources"`
	}
	if json.Unmarshal([]byte(stdout), &v) != nil || v.Resources == nil {
		return ""
	}
	return v.Status
}

// fanoutStep picks the next invocation and, for a kill, when to kill it.
func fanoutStep(rng *rand.Rand, shop *fakeapi.Shop, job string) ([]string, func() bool) {
	switch n := rng.Intn(100); {
	case n < 40:
		return []string{"run", job}, nil
	case n < 62:
		deadline := time.Now().Add(time.Duration(10+rng.Intn(90)) * time.Millisecond)
		return []string{"run", job}, func() bool { return time.Now().After(deadline) }
	case n < 82:
		at := shop.TotalRequests() + 1 + rng.Intn(12)
		return []string{"run", job}, func() bool { return shop.TotalRequests() >= at }
	case n < 94:
		return []string{"run", job, "--max-pages", fmt.Sprint(1 + rng.Intn(4))}, nil
	default:
		return []string{"resume", job}, nil
	}
}

// fanoutMutate changes the shop between invocations and says how.
func fanoutMutate(rng *rand.Rand, shop *fakeapi.Shop, sc fanoutScenario) string {
	ps := shop.Parents()
	p := ps[rng.Intn(len(ps))].ID
	if sc.Deletes != "" && rng.Intn(3) == 0 {
		if kids := shop.Children(p); len(kids) > 0 {
			c := kids[rng.Intn(len(kids))].ID
			if sc.ChildStyle == "page" {
				// Only the last: one before it would shift the rest back,
				// and a page walk continued after it (--max-pages, a kill)
				// misses the record pushed onto a page it already read, a
				// documented limit of page walks (docs/deletions.md,
				// "Limits"), not of the fan-out.
				c = kids[len(kids)-1].ID
			}
			shop.DeleteChild(p, c)
			return fmt.Sprintf("item %d of order %d deleted", c, p)
		}
	}
	switch rng.Intn(5) {
	case 0:
		return fmt.Sprintf("%d items added to order %d", len(shop.AddChildren(p, 1+rng.Intn(3))), p)
	case 1:
		if kids := shop.Children(p); len(kids) > 0 {
			c := kids[rng.Intn(len(kids))].ID
			shop.UpdateChild(p, c)
			return fmt.Sprintf("item %d of order %d updated", c, p)
		}
		shop.TouchParent(p)
		return fmt.Sprintf("order %d touched", p)
	case 2:
		shop.TouchParent(p)
		return fmt.Sprintf("order %d touched", p)
	case 3:
		shop.UpdateParent(p)
		return fmt.Sprintf("order %d updated", p)
	default:
		added := shop.AddParents(1, sc.MaxChildren)
		return fmt.Sprintf("order %d added with %d items", added[0].ID, len(shop.Children(added[0].ID)))
	}
}

// shopKeys returns the row keys of snap's records: "P" for an order, "P|C"
// for an item.
func shopKeys(snap fakeapi.ShopSnapshot) map[string]bool {
	out := map[string]bool{}
	for id := range snap.Parents {
		out[strconv.Itoa(id)] = true
	}
	for _, cs := range snap.Children {
		for _, c := range cs {
			out[fmt.Sprintf("%d|%d", c.ParentID, c.ID)] = true
		}
	}
	return out
}

// fanoutHoles reads both tables (failing on a duplicate key) and lists how
// they differ from end for every parent unchanged between start and end,
// itself and its children: a missing, stale or extra row. Rows of parents
// the source held neither at start nor at end are wrong, unless pending
// holds them (a pass before may have seen their records: they go at the
// next proving pass).
func fanoutHoles(t *testing.T, tgt shopTarget, dir string, start, end fakeapi.ShopSnapshot, pending map[string]bool) []string {
	t.Helper()
	orders := tgt.read(t, dir, "orders", 1, ordersCols...)
	items := tgt.read(t, dir, "order_items", 2, itemsCols...)
	if end.Parents == nil {
		return nil
	}
	var bad []string
	byParent := map[string]shopTable{}
	for k, v := range items {
		pid, _, _ := strings.Cut(k, "|")
		if byParent[pid] == nil {
			byParent[pid] = shopTable{}
		}
		byParent[pid][k] = v
		if id, _ := strconv.Atoi(pid); end.Parents[id].ID == 0 && start.Parents[id].ID == 0 && !pending[k] {
			bad = append(bad, fmt.Sprintf("item %s of an order the source lacks", k))
		}
	}
	for k := range orders {
		// An order deleted while the run was under way (parentdel) may
		// have been read before it went: only one gone before is claimed.
		if id, _ := strconv.Atoi(k); end.Parents[id].ID == 0 && start.Parents[id].ID == 0 && !pending[k] {
			bad = append(bad, fmt.Sprintf("order %s not in the source", k))
		}
	}
	for id, p := range end.Parents {
		s, ok := start.Parents[id]
		if !ok || s != p || fmt.Sprint(start.Children[id]) != fmt.Sprint(end.Children[id]) {
			continue // changed during the run: no claim
		}
		key := strconv.Itoa(id)
		if d := diffTables(shopTable{key: orders[key]}, wantOrders([]fakeapi.ShopParent{p})); orders[key] == "" || d != "" {
			bad = append(bad, fmt.Sprintf("order %d: %q, want %q", id, orders[key], wantOrders([]fakeapi.ShopParent{p})[key]))
		}
		want := wantOrderItems(end.Children[id])
		got := shopTable{}
		for k, v := range byParent[key] {
			if _, wanted := want[k]; wanted || !pending[k] { // a pending row may stay
				got[k] = v
			}
		}
		if d := diffTables(got, want); d != "" {
			bad = append(bad, fmt.Sprintf("items of order %d: %s", id, d))
		}
	}
	return bad
}
