// Package fakes holds the two services of the invoices story
// (docs/changes.md, examples/invoices): a billing API that lists invoices
// in pages, changes them between nights and sometimes fails or hangs, and
// an email API that honours Idempotency-Key, counts the reminders it
// delivered per invoice, and sometimes fails, before accepting a request
// or after (the sender then cannot tell that the email went out).
package fakes

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Invoice is one invoice of the billing API.
type Invoice struct {
	ID        int       `json:"id"`
	Customer  string    `json:"customer"`
	Email     string    `json:"email"`
	Amount    string    `json:"amount"`
	Status    string    `json:"status"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Billing is the billing API: GET /invoices?page=N&per_page=M (N from 1)
// answers {"data": [...], "meta": {"total": T, "total_pages": P}} in id
// order. FailRate of the requests answer 503; HangRate hang for Hang
// before answering (past a client's timeout).
type Billing struct {
	FailRate, HangRate float64
	Hang               time.Duration

	mu       sync.Mutex
	rnd      *rand.Rand
	invoices []Invoice
	last     int // the last id issued
}

// NewBilling returns a billing API with no invoice, its faults drawn from
// seed.
func NewBilling(seed uint64) *Billing {
	return &Billing{rnd: rand.New(rand.NewPCG(seed, 1)), Hang: 2 * time.Second}
}

// Add issues n new invoices and returns their ids.
func (b *Billing) Add(n int) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []int
	for range n {
		b.last++
		id := b.last
		b.invoices = append(b.invoices, Invoice{ID: id, Customer: fmt.Sprintf("Customer %d", id),
			Email: fmt.Sprintf("c%d@example.com", id), Amount: fmt.Sprintf("%d.%02d", 10+b.rnd.IntN(990), b.rnd.IntN(100)),
			Status: "open", UpdatedAt: time.Now().UTC().Truncate(time.Millisecond)})
		ids = append(ids, id)
	}
	return ids
}

// Update changes n invoices picked at random (a payment, a correction):
// updates, which must not send a second reminder.
func (b *Billing) Update(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range min(n, len(b.invoices)) {
		inv := &b.invoices[b.rnd.IntN(len(b.invoices))]
		inv.Status = []string{"open", "paid", "overdue"}[b.rnd.IntN(3)]
		inv.Amount = fmt.Sprintf("%d.%02d", 10+b.rnd.IntN(990), b.rnd.IntN(100))
		inv.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
}

// Remove deletes n invoices picked at random (voided, or deleted by
// mistake) and returns their ids; the ones after them move a place up in
// the pages, as when a real API's list loses a record. Ids are never
// issued again.
func (b *Billing) Remove(n int) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []int
	for range min(n, len(b.invoices)) {
		i := b.rnd.IntN(len(b.invoices))
		ids = append(ids, b.invoices[i].ID)
		b.invoices = append(b.invoices[:i], b.invoices[i+1:]...)
	}
	return ids
}

// IDs returns every invoice's id.
func (b *Billing) IDs() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]int, len(b.invoices))
	for i, inv := range b.invoices {
		ids[i] = inv.ID
	}
	return ids
}

func (b *Billing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/invoices" {
		http.NotFound(w, r)
		return
	}
	b.mu.Lock()
	fail, hang := b.rnd.Float64() < b.FailRate, b.rnd.Float64() < b.HangRate
	b.mu.Unlock()
	if hang {
		select {
		case <-time.After(b.Hang):
		case <-r.Context().Done():
			return
		}
	}
	if fail {
		http.Error(w, `{"error":"billing is busy"}`, http.StatusServiceUnavailable)
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	page, size = max(page, 1), max(size, 1)
	b.mu.Lock()
	total := len(b.invoices)
	from, to := min((page-1)*size, total), min(page*size, total)
	data := append([]Invoice{}, b.invoices[from:to]...)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"data": data, "meta": map[string]int{"total": total, "total_pages": (total + size - 1) / size}})
}

// Email is the email API: POST /send with an Idempotency-Key header and a
// JSON body {"invoice": "ID"}. A key it has answered before gets the same
// answer and sends nothing. FailBefore of the requests answer 503 and
// send nothing; FailAfter send the reminder and then answer 500, and
// HangAfter send it and then hang for Hang (past a client's timeout).
type Email struct {
	FailBefore, FailAfter, HangAfter float64
	Hang                             time.Duration

	mu        sync.Mutex
	rnd       *rand.Rand
	answered  map[string]string // idempotency key -> answer
	delivered map[string]int    // invoice -> reminders delivered
	requests  int
}

// NewEmail returns an email API that has sent nothing, its faults drawn
// from seed.
func NewEmail(seed uint64) *Email {
	return &Email{rnd: rand.New(rand.NewPCG(seed, 2)), Hang: 2 * time.Second, answered: map[string]string{}, delivered: map[string]int{}}
}

// Faults sets FailBefore, FailAfter and HangAfter while the API serves.
func (e *Email) Faults(before, after, hang float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.FailBefore, e.FailAfter, e.HangAfter = before, after, hang
}

// Delivered returns how many reminders each invoice got.
func (e *Email) Delivered() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.delivered))
	for k, v := range e.delivered {
		out[k] = v
	}
	return out
}

// Twice returns the invoices that got more than one reminder, sorted.
func (e *Email) Twice() []string {
	var out []string
	for inv, n := range e.Delivered() {
		if n > 1 {
			out = append(out, inv)
		}
	}
	sort.Strings(out)
	return out
}

func (e *Email) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/send" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	var body struct {
		Invoice string `json:"invoice"`
	}
	if key == "" || json.NewDecoder(r.Body).Decode(&body) != nil || body.Invoice == "" {
		http.Error(w, `{"error":"need Idempotency-Key and {\"invoice\": ID}"}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests++
	if ans, ok := e.answered[key]; ok {
		e.mu.Unlock()
		fmt.Fprint(w, ans)
		return
	}
	if e.rnd.Float64() < e.FailBefore {
		e.mu.Unlock()
		http.Error(w, `{"error":"mail queue full"}`, http.StatusServiceUnavailable)
		return
	}
	e.delivered[body.Invoice]++
	ans := fmt.Sprintf(`{"message_id":"m-%d","invoice":%q}`, e.requests, body.Invoice)
	e.answered[key] = ans
	failAfter, hangAfter := e.rnd.Float64() < e.FailAfter, e.rnd.Float64() < e.HangAfter
	e.mu.Unlock()
	switch {
	case hangAfter:
		select {
		case <-time.After(e.Hang):
		case <-r.Context().Done():
			return
		}
	case failAfter:
		http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, ans)
}
