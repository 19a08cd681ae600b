package e2e

import (
	"fmt"
	"math/rand"
	"net/http"
	"sort"
	"strconv"
	"strings"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// fanoutHostileKinds are the hostile kinds of the fan-out model (issue 22,
// docs/fault-tolerance.md), off unless -model-hostile names them:
//
//   - parentdel: orders (and with them their items) deleted between
//     invocations and in the middle of a walk; orders and order_items
//     both with deletes: hard, parent_rows: all.
//   - selection: now and then `run --resource order_items` or `run
//     --resource orders` instead of the whole file; order_items with
//     deletes: hard, parent_rows: all.
var fanoutHostileKinds = []string{"parentdel", "selection"}

// drawHostile draws the scenario's hostile kinds from a source of its own
// (each enabled kind with probability 2/3, every draw taken whether the
// kind is enabled or not) and adjusts the scenario to them.
func (sc *fanoutScenario) drawHostile(enabled map[string]bool) {
	hrng := rand.New(rand.NewSource(sc.Seed ^ 0x686f7374))
	for _, k := range fanoutHostileKinds {
		if hrng.Intn(3) == 0 || !enabled[k] {
			continue
		}
		sc.Hostiles = append(sc.Hostiles, k)
		sc.ParentRows, sc.Deletes = "all", "hard"
		if k == "parentdel" {
			sc.Incremental, sc.Mutations, sc.ParentDeletes = false, true, "hard"
			// orders sweeps now: a page walk shifted by an order deleted
			// during its pass (between two invocations, or without a total
			// in one) can miss a record and sweep its row, a documented
			// limit of page walks (docs/deletions.md, "Limits"), not of
			// the fan-out. A cursor walk is not shifted.
			sc.ParentStyle = "cursor"
		}
	}
}

// fanoutGuard is sweepGuard for the two tables of the fan-out model: a
// row present at one observation and gone at the next is legal only if
// its key was absent from the shop at some moment since the first
// invocation after the last completed run of the whole file.
type fanoutGuard struct {
	shop *fakeapi.Shop
	from fakeapi.ShopPresence
	prev map[string]bool // ShopKey of every row at the last observation
}

func (g *fanoutGuard) check(t *testing.T, tgt shopTarget, dir string) []string {
	now := map[string]bool{}
	for k := range tgt.read(t, dir, "orders", 1, ordersCols...) {
		id, _ := strconv.Atoi(k)
		now[fakeapi.ShopKey(id, 0)] = true
	}
	for k := range tgt.read(t, dir, "order_items", 2, itemsCols...) {
		p, c, _ := strings.Cut(k, "|")
		pid, _ := strconv.Atoi(p)
		cid, _ := strconv.Atoi(c)
		now[fakeapi.ShopKey(pid, cid)] = true
	}
	var bad []string
	for k := range g.prev {
		if !now[k] && !g.shop.AbsentSince(g.from, k) {
			bad = append(bad, k+" deleted while at the source throughout the pass")
		}
	}
	sort.Strings(bad)
	g.prev = now
	return bad
}

// fanoutHostileHarness drives the fan-out model's hostile kinds.
type fanoutHostileHarness struct {
	sc      fanoutScenario
	shop    *fakeapi.Shop
	rng     *rand.Rand
	mu      gosync.Mutex
	deleted int          // parents deleted so far (at most 6)
	gone    map[int]bool // the ids of those parents
}

// between deletes a parent between invocations now and then (parentdel).
func (h *fanoutHostileHarness) between() string {
	if !h.sc.IsHostile("parentdel") || h.rng.Intn(4) != 0 {
		return ""
	}
	if id, ok := h.deleteOne(h.rng.Intn(1 << 20)); ok {
		return fmt.Sprintf("order %d deleted with its items", id)
	}
	return ""
}

// deleteOne deletes the parent that pick chooses among the shop's, within
// the budget and keeping two parents.
func (h *fanoutHostileHarness) deleteOne(pick int) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.shop.Parents()
	if h.deleted >= 6 || len(ps) <= 2 {
		return 0, false
	}
	id := ps[pick%len(ps)].ID
	h.deleted++
	if h.gone == nil {
		h.gone = map[int]bool{}
	}
	h.gone[id] = true
	return id, h.shop.DeleteParent(id)
}

// goneParent404 reports whether ex failed on a 404 for the children of a
// parent deleted at the source (on its first page, or on a later page or
// the probe of its end when it went in the middle of its walk): while the parent's row is still in the
// parent table (its resource has not run a pass that removes it), the
// child cannot tell a deleted parent from a wrong path, and fails
// (docs/job-file.md); the next whole-file run removes the parent first.
// A child that kept failing so would end the seed with no progress.
func (h *fanoutHostileHarness) goneParent404(ex modelExit) bool {
	if ex.code != 1 || !strings.Contains(ex.stderr, "HTTP 404") {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.gone {
		if strings.Contains(ex.stderr, fmt.Sprintf("parent orders id=%d,", id)) {
			return true
		}
	}
	return false
}

// refusedMassDelete reports whether ex is a sweep refused by
// max_delete_ratio after parentdel deleted parents with their items: on a
// small shop the parents it deletes (up to all but two) can take most of
// the items with them, a mass change the sweep must refuse
// (docs/deletions.md) and that stays refused until an operator allows it.
func (h *fanoutHostileHarness) refusedMassDelete(ex modelExit) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return ex.code == 1 && h.deleted > 0 && strings.Contains(ex.stderr, "> max_delete_ratio")
}

// arm makes, now and then, the shop delete a parent in the middle of the
// next invocation's walk, after a few more requests (parentdel).
func (h *fanoutHostileHarness) arm(t *testing.T) {
	h.shop.OnRequest(nil)
	if !h.sc.IsHostile("parentdel") || h.rng.Intn(3) != 0 {
		return
	}
	at, pick := h.shop.TotalRequests()+1+h.rng.Intn(10), h.rng.Intn(1<<20)
	var once gosync.Once
	h.shop.OnRequest(func(*http.Request) {
		if h.shop.TotalRequests() >= at {
			once.Do(func() {
				if id, ok := h.deleteOne(pick); ok {
					t.Logf("order %d deleted with its items in the middle of the walk", id)
				}
			})
		}
	})
}

// selection replaces a whole-file run with a --resource selection now and
// then, and reports whether it did.
func (h *fanoutHostileHarness) selection(args []string) ([]string, bool) {
	if !h.sc.IsHostile("selection") || args[0] != "run" || h.rng.Intn(4) != 0 {
		return args, false
	}
	res := []string{"order_items", "orders"}[h.rng.Intn(2)]
	return append([]string{"run", "--resource", res}, args[1:]...), true
}
