package paging

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/idemsync/idemsync/internal/urlquery"
)

// At is one style's position of a page: what the style needs to ask for
// that page, nothing else. Each style owns its type, in its own file
// (PageAt in style_page.go, ...), and reads it back from its encoded form
// (Style.decode); Position is the envelope the engine adds around it.
type At interface {
	// Style is the name of the style the position belongs to: the
	// encoded form says it, so no one guesses it from the fields set.
	Style() string
}

// sized is a style's position that carries the page size the API really
// serves when it caps pages below pagination.size (page, offset, hwm).
type sized interface {
	At
	// served is that size; 0 = pagination.size.
	served() int
	// serving is the same position asked at n records per page.
	Serving(n int) At
}

// Position is where a page is in a run: the style's position (At) in the
// envelope of the run's windows. It is stored encoded (Encode) as the
// checkpoint; docs/architecture.md, "Positions", gives the format.
type Position struct {
	// At is the style's position; nil where no page is addressed (the end
	// of a child run without parent rows, a parent's walk cut short).
	At At
	// Win is the window of the run the position is in (incremental.step,
	// or a child's parent; 0 = the first, or the only one).
	Win int
	// Fly is the other windows of the run in flight or done beyond Win
	// when several are walked at once (incremental.concurrency, a child's
	// parents): see Flight. nil for a run walked one window at a time.
	Fly *Flight
	// Parent, in a child run (docs/job-file.md, "Parent → child fan-out"),
	// names the parent row of window Win by its key ("id=42") for people;
	// "" otherwise.
	Parent string
	// End: pagination reached its end after this position.
	End bool
}

// Size is the page size the API serves at p as p records it (0 =
// pagination.size, or a style that records none).
func (p Position) Size() int {
	if s, ok := p.At.(sized); ok {
		return s.served()
	}
	return 0
}

// Serving is p asked at n records per page (p itself for a style that
// records no size).
func (p Position) Serving(n int) Position {
	if s, ok := p.At.(sized); ok {
		p.At = s.Serving(n)
	}
	return p
}

// SameSpot reports whether a and b address the same page whatever page
// size each records.
func SameSpot(a, b At) bool {
	if s, ok := a.(sized); ok {
		a = s.Serving(0)
	}
	if s, ok := b.(sized); ok {
		b = s.Serving(0)
	}
	return a == b
}

// Windows is the run's windows in flight beyond Win as p records them:
// none, and Win+1 started, for a run walked one window at a time.
func (p Position) Windows() Flight {
	if p.Fly == nil {
		return Flight{Started: p.Win + 1}
	}
	return *p.Fly
}

// Describe returns the position as a person reads it: "page 3", "offset
// 200", "cursor abc", a URL, or a mark, in its window or parent. style
// describes a position without At ("start" for none or an unknown style).
// r redacts secrets that a next URL may carry.
func (p Position) Describe(style string, r Redacter) string {
	if p.At != nil {
		style = p.At.Style()
	}
	s := Of(style).describe(p.At, r)
	switch {
	case p.Parent == NoParents:
		return "no parent rows (end)"
	case p.Parent != "" && p.End:
		return fmt.Sprintf("parent %d (%s) (end)", p.Win+1, p.Parent)
	case p.Parent != "":
		s = fmt.Sprintf("parent %d (%s), %s", p.Win+1, p.Parent, s)
	case p.Win > 0 || p.Fly != nil:
		s = fmt.Sprintf("window %d, %s", p.Win+1, s)
	}
	if p.Fly != nil && len(p.Fly.Pos) > 0 {
		what := "windows"
		if p.Parent != "" {
			what = "parents"
		}
		s += fmt.Sprintf(" (+%d %s in flight)", len(p.Fly.Pos), what)
	}
	if p.End {
		s += " (end)"
	}
	return s
}

// ParsePosition reads a user-given position (replay --from/--to) for a
// style: a page number, an offset, a cursor token, a next URL, or a mark.
// It fails for a value the style cannot read or a checkpoint cannot store
// (Storable), and for none or an unknown style.
func ParsePosition(style, v string) (Position, error) {
	if !Known(style) {
		return Position{}, fmt.Errorf("style %s has no positions to replay from", style)
	}
	at, err := Of(style).parse(strings.TrimSpace(v))
	if err == nil {
		err = Storable(at)
	}
	return Position{At: at}, err
}

// LastBefore reports whether the page at pos is the last one a replay
// bounded by to re-reads, next being the position after it: for page,
// offset and hwm styles when next lies past to (a mark equal to to may
// still have records to come); for cursor and link styles when pos is to
// itself (URLs compared whatever the order of their query parameters).
func LastBefore(style string, pos, next, to Position) bool {
	return Of(style).lastBefore(pos.At, next.At, to.At)
}

// LoopKey identifies a position for loop detection: a style whose next
// page is named by the API (cursor, link) says how; "" for the others,
// whose positions always advance.
func LoopKey(p Position) string {
	if k, ok := p.At.(interface{ loopKey() string }); ok {
		return k.loopKey()
	}
	return ""
}

// decodeAt reads a style's encoded position into its type T; nothing
// encoded is T's zero value.
func decodeAt[T At](b json.RawMessage) (At, error) {
	var a T
	if len(b) == 0 {
		return a, nil
	}
	err := json.Unmarshal(b, &a)
	return a, err
}

// sameURL reports whether two URLs are equal but for the order of their
// query parameters.
func sameURL(a, b string) bool {
	if a == b {
		return true
	}
	ua, err := url.Parse(a)
	if err != nil || a == "" {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil || b == "" {
		return false
	}
	ua.RawQuery, ub.RawQuery = urlquery.Parse(ua.RawQuery).Canonical(), urlquery.Parse(ub.RawQuery).Canonical()
	return ua.String() == ub.String()
}

// Flight is Position.Fly: the windows of a run beyond Win. Its
// positions are stored in their style's form (position_codec.go).
type Flight struct {
	Pos     map[int]At `json:"-"`              // windows after Win in flight: their next page
	Done    []int      `json:"done,omitempty"` // windows after Win completed
	Started int        `json:"started"`        // windows started (the next to start)
	// A child run's walk of its parents (parent_stream.go): the parent row
	// of each window in flight (Win's included), the row of the last
	// window started, and the parent_rows: changed start ("" for none).
	Rows  map[string]string `json:"rows,omitempty"`
	Last  string            `json:"last,omitempty"`
	Since string            `json:"since,omitempty"`
}

// NoParents is Position.Parent of a child run without parent rows: it
// completes as it starts.
const NoParents = "-"

// Redacter hides a job's secrets in what is shown to people (the engine's
// Redactor); describing a position takes one, as a next URL may carry a
// secret.
type Redacter interface{ Redact(string) string }

// MapText returns a with f applied to the text the API gave in it (a
// cursor's token, a next URL); a position of another style is returned as
// it is. The engine seals and unseals the job's secrets with it
// (docs/job-file.md, "What is and is not a secret").
func MapText(a At, f func(string) string) At {
	switch p := a.(type) {
	case CursorAt:
		p.Cursor, p.URL = f(p.Cursor), f(p.URL)
		return p
	case LinkAt:
		p.URL = f(p.URL)
		return p
	}
	return a
}
