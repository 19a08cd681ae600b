package fakeapi

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Shop shapes, the values of ShopOptions.Shape.
const (
	// ShapeShop serves customers, orders and each order's items:
	//
	//	GET /customers
	//	GET /orders[?updated_since=RFC3339]
	//	GET /orders/{id}/items
	//
	// as {"data":[...],"meta":{"page","per_page","total","total_pages","has_more","next_cursor"}}.
	ShapeShop = "shop"
	// ShapeGitHub serves repositories and each repository's issues as bare
	// arrays with an RFC 8288 Link header, as GitHub does:
	//
	//	GET /repos
	//	GET /orgs/{owner}/repos
	//	GET /repos/{owner}/{name}/issues
	ShapeGitHub = "github"
)

// ShopOptions configures NewShop. The zero value is a shop of 30 orders.
type ShopOptions struct {
	// Shape is ShapeShop (the default) or ShapeGitHub.
	Shape string
	// Parents is the number of parents (orders or repositories), ids
	// 1..Parents. Defaults to 30; a negative value means none.
	Parents int
	// Customers is the number of customers (shop shape). Defaults to 10.
	Customers int
	// MaxChildren bounds the children of a parent: each has 0..MaxChildren,
	// drawn from Seed (parent 1 always has none, parent 2 always has
	// MaxChildren). Defaults to 12.
	MaxChildren int
	// ChildCount, when set, replaces the drawn number of children of a
	// parent (for benchmarks that want exactly n child pages).
	ChildCount func(parentID int) int
	// PageSize is the page size when a request names none (per_page or
	// limit). Defaults to 10.
	PageSize int
	// Latency is slept at the start of every request. Defaults to none.
	Latency time.Duration
	// Seed makes the data set reproducible: the same options give the same
	// parents, children and mutations. Defaults to 0.
	Seed int64
	// BaseTime is the updated_at origin. Defaults to DefaultBaseTime.
	BaseTime time.Time
	// NotFound lists parents whose children route answers 404 (see also
	// SetNotFound).
	NotFound []int
	// Faults injects random faults on every route (see Faults); the zero
	// value injects none.
	Faults Faults
}

// ShopParent is an order (shop shape) or a repository (github shape).
type ShopParent struct {
	ID         int
	CustomerID int    // shop: the customer who placed the order
	Status     string // shop: the order's status; github: the visibility
	Total      Cents  // shop: the order's total
	Owner      string // github: the owner's login
	Name       string // github: the repository's name
	UpdatedAt  time.Time
}

// ShopChild is an order's item (shop shape) or a repository's issue
// (github shape). IDs are unique across all parents and never reused.
type ShopChild struct {
	ID        int
	ParentID  int
	Number    int    // 1, 2, ... within the parent (github: the issue number)
	SKU       string // shop: the item's sku; github: the title
	Qty       int    // shop: the quantity; github: the number of comments
	UpdatedAt time.Time
}

// ShopCustomer is a customer of the shop shape.
type ShopCustomer struct {
	ID        int
	Name      string
	Email     string
	UpdatedAt time.Time
}

// Shop is a two-level API: parents, each with its own paginated children.
// All methods are safe for concurrent use, also while requests are served.
type Shop struct {
	shape    string
	pageSize int
	seed     int64
	latency  atomic.Int64

	mu        sync.RWMutex
	customers []ShopCustomer
	parents   []ShopParent        // by id
	children  map[int][]ShopChild // parent id → children by id
	notFound  map[int]bool
	failing   map[string]int // path prefix → status
	clock     time.Time
	nextChild int
	rng       *rand.Rand // mutation contents

	faults faultInjector
	log    shopLog
	gone   shopRemovals                        // removals, for AbsentSince
	hook   atomic.Pointer[func(*http.Request)] // OnRequest
}

// NewShop builds the data set described by opts. It panics on an unknown
// shape or invalid faults, as that is a bug in the test.
func NewShop(opts ShopOptions) *Shop {
	if opts.Shape == "" {
		opts.Shape = ShapeShop
	}
	if opts.Shape != ShapeShop && opts.Shape != ShapeGitHub {
		panic(fmt.Sprintf("fakeapi: unknown shop shape %q", opts.Shape))
	}
	if opts.Parents == 0 {
		opts.Parents = 30
	}
	if opts.Customers <= 0 {
		opts.Customers = 10
	}
	if opts.MaxChildren <= 0 {
		opts.MaxChildren = 12
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 10
	}
	if opts.BaseTime.IsZero() {
		opts.BaseTime = DefaultBaseTime
	}
	s := &Shop{
		shape:    opts.Shape,
		pageSize: opts.PageSize,
		seed:     opts.Seed,
		children: map[int][]ShopChild{},
		notFound: map[int]bool{},
		failing:  map[string]int{},
		clock:    opts.BaseTime.UTC().Truncate(time.Second),
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x5409)),
	}
	s.latency.Store(int64(opts.Latency))
	for id := 1; id <= opts.Customers; id++ {
		s.clock = s.clock.Add(time.Second)
		s.customers = append(s.customers, ShopCustomer{ID: id, Name: fmt.Sprintf("Customer %d", id),
			Email: fmt.Sprintf("c%d@example.com", id), UpdatedAt: s.clock})
	}
	for id := 1; id <= opts.Parents; id++ {
		n := s.childCount(opts, id)
		s.addParent(id, n, len(s.customers))
	}
	for _, id := range opts.NotFound {
		s.notFound[id] = true
	}
	s.SetFaults(opts.Faults)
	s.log.reset()
	return s
}

// childCount is how many children parent id starts with.
func (s *Shop) childCount(opts ShopOptions, id int) int {
	switch {
	case opts.ChildCount != nil:
		return opts.ChildCount(id)
	case id == 1:
		return 0
	case id == 2:
		return opts.MaxChildren
	}
	return rand.New(rand.NewPCG(uint64(opts.Seed), uint64(id))).IntN(opts.MaxChildren + 1)
}

// addParent appends parent id with n children. The caller holds s.mu or
// owns s.
func (s *Shop) addParent(id, n, customers int) ShopParent {
	rng := rand.New(rand.NewPCG(uint64(s.seed), uint64(id)^0xbeef))
	s.clock = s.clock.Add(time.Second)
	p := ShopParent{
		ID:         id,
		CustomerID: 1 + rng.IntN(max(customers, 1)),
		Status:     []string{"open", "paid", "shipped"}[rng.IntN(3)],
		Total:      Cents(rng.IntN(100000)),
		Owner:      fmt.Sprintf("org%d", 1+id%3),
		Name:       fmt.Sprintf("repo-%d", id),
		UpdatedAt:  s.clock,
	}
	s.parents = append(s.parents, p)
	for range n {
		s.newChild(id, rng)
	}
	return p
}

// newChild appends a new child to parent pid. The caller holds s.mu.
func (s *Shop) newChild(pid int, rng *rand.Rand) ShopChild {
	s.nextChild++
	s.clock = s.clock.Add(time.Second)
	kids := s.children[pid]
	c := ShopChild{
		ID:        s.nextChild,
		ParentID:  pid,
		Number:    len(kids) + 1,
		SKU:       fmt.Sprintf("SKU-%04d", rng.IntN(10000)),
		Qty:       1 + rng.IntN(9),
		UpdatedAt: s.clock,
	}
	if n := len(kids); n > 0 {
		c.Number = kids[n-1].Number + 1
	}
	s.children[pid] = append(kids, c)
	return c
}

// Shape returns ShapeShop or ShapeGitHub.
func (s *Shop) Shape() string { return s.shape }

// Parents returns a copy of every parent, by id.
func (s *Shop) Parents() []ShopParent {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.parents)
}

// Children returns a copy of parent id's children, by id.
func (s *Shop) Children(id int) []ShopChild {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.children[id])
}

// AllChildren returns a copy of every child, by parent id and then id.
func (s *Shop) AllChildren() []ShopChild {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ShopChild
	for _, p := range s.parents {
		out = append(out, s.children[p.ID]...)
	}
	return out
}

// Customers returns a copy of every customer, by id.
func (s *Shop) Customers() []ShopCustomer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.customers)
}

// SetLatency changes the per-request latency for requests that start later.
func (s *Shop) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetNotFound makes parent id's children route answer 404 (on) or serve
// again (off).
func (s *Shop) SetNotFound(id int, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notFound[id] = on
}

// SetFailing makes every request whose path starts with prefix answer
// status (e.g. 503) until SetFailing(prefix, 0).
func (s *Shop) SetFailing(prefix string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.failing, prefix)
		return
	}
	s.failing[prefix] = status
}

// SetFaults replaces the random fault configuration (see API.SetFaults).
func (s *Shop) SetFaults(f Faults) {
	if err := f.Validate(); err != nil {
		panic(err)
	}
	f.Kinds = slices.Clone(f.Kinds)
	if len(f.Kinds) == 0 {
		f.Kinds = FaultKinds()
	}
	if f.SlowDelay == 0 {
		f.SlowDelay = DefaultSlowDelay
	}
	fi := &s.faults
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.cfg = f
	fi.rng = rand.New(rand.NewPCG(uint64(f.Seed), 0xfa17))
	fi.consecutive, fi.injected = 0, 0
}
