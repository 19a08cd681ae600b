package fakeapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is one item of the data set. Its JSON form is
//
//	{"id":1,"name":"Customer 1","customer":{"email":"c1@example.com"},
//	 "total":12.50,"active":true,"updated_at":"2024-01-01T00:00:01Z","tags":["a","b"]}
//
// Tags is never nil, so it encodes as [] rather than null.
type Record struct {
	ID        int       `json:"id"`
	Name      string    `json:"name"`
	Customer  Customer  `json:"customer"`
	Total     Cents     `json:"total"`
	Active    bool      `json:"active"`
	UpdatedAt time.Time `json:"updated_at"`
	Tags      []string  `json:"tags"`
	// Lines, when a test sets them (Update), are the record's line items:
	// an array of objects with an array of their own, for child tables.
	// Absent from the JSON when nil.
	Lines []Line `json:"lines,omitempty"`
}

// Line is a line item of a Record.
type Line struct {
	ID        int      `json:"id"`
	SKU       string   `json:"sku"`
	Qty       int      `json:"qty"`
	Discounts []string `json:"discounts"`
}

// Customer is the nested object of a Record, so that tests can map a nested
// path such as customer.email.
type Customer struct {
	Email string `json:"email"`
}

// Cents is an amount of money held as an integer number of cents. It encodes
// as a JSON number with exactly two decimals (1250 → 12.50, 5 → 0.05), so
// that exact-decimal handling can be tested without float rounding.
type Cents int64

// String returns the amount with exactly two decimals, e.g. "12.50" or "-0.05".
func (c Cents) String() string {
	sign := ""
	v := int64(c)
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}

// MarshalJSON writes the amount as a bare JSON number with two decimals.
func (c Cents) MarshalJSON() ([]byte, error) {
	return []byte(c.String()), nil
}

// UnmarshalJSON reads a JSON number (or a quoted decimal) with at most two
// decimals without going through float64. It returns an error for anything
// else, including more than two decimals.
func (c *Cents) UnmarshalJSON(b []byte) error {
	v, err := ParseCents(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseCents parses a decimal such as "12.5", "12.50" or "-3" into Cents. It
// returns an error when s is not a decimal or has more than two decimals.
func ParseCents(s string) (Cents, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	whole, frac, hasDot := strings.Cut(digits, ".")
	if whole == "" || (hasDot && (frac == "" || len(frac) > 2)) {
		return 0, fmt.Errorf("fakeapi: bad amount %q", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	w, err1 := strconv.ParseUint(whole, 10, 62)
	f, err2 := strconv.ParseUint(frac, 10, 8)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("fakeapi: bad amount %q", s)
	}
	v := Cents(w*100 + f)
	if neg {
		v = -v
	}
	return v, nil
}

// tagPool is where generated records draw their tags from.
var tagPool = []string{"a", "b", "c", "vip", "new"}

// generate builds record id deterministically from (seed, id) alone, so a
// record's content does not depend on the order in which records were made.
func generate(seed int64, id int, updatedAt time.Time) Record {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(id)))
	tags := []string{}
	for _, t := range tagPool {
		if rng.IntN(3) == 0 {
			tags = append(tags, t)
		}
	}
	return Record{
		ID:        id,
		Name:      fmt.Sprintf("Customer %d", id),
		Customer:  Customer{Email: fmt.Sprintf("c%d@example.com", id)},
		Total:     Cents(rng.IntN(200000)),
		Active:    rng.IntN(4) != 0,
		UpdatedAt: updatedAt,
		Tags:      tags,
	}
}

// clone returns a copy of r that shares no memory with it.
func (r Record) clone() Record {
	r.Tags = slices.Clone(r.Tags)
	if r.Lines != nil {
		lines := make([]Line, len(r.Lines))
		for i, l := range r.Lines {
			l.Discounts = slices.Clone(l.Discounts)
			lines[i] = l
		}
		r.Lines = lines
	}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	return r
}
