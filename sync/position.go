package sync

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Position is where a page is in its pagination: which fields are used
// depends on the style. It is stored encoded (Encode) as the checkpoint.
type Position struct {
	Page   int64  `json:"page,omitempty"`   // page style: page number
	Offset int64  `json:"offset,omitempty"` // offset style: offset of the first record
	Cursor string `json:"cursor,omitempty"` // cursor style (next, next_header); "" = first page
	URL    string `json:"url,omitempty"`    // cursor next_url and link styles; "" = source.url
	Mark   string `json:"mark,omitempty"`   // hwm style: the mark sent; "" = no mark yet
	End    bool   `json:"end,omitempty"`    // pagination reached its end after this position
	// Size is the page size the API really serves when it caps pages
	// below pagination.size (page, offset, hwm); 0 = pagination.size.
	Size int `json:"size,omitempty"`
	// Win is the window of the run the position is in (incremental.step;
	// 0 = the first, or the only one).
	Win int `json:"win,omitempty"`
	// Fly holds, encoded, the other windows of the run in flight or done
	// beyond Win when several are walked at once (incremental.concurrency):
	// see windowState. "" for a run walked one window at a time.
	Fly string `json:"fly,omitempty"`
	// Parent, in a child run (docs/job-file.md, "Parent → child fan-out"),
	// names the parent row of window Win by its key ("id=42") for people; ""
	// otherwise.
	Parent string `json:"parent,omitempty"`
}

// Encode returns the stored form of p.
func (p Position) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// DecodePosition parses a stored Position. "" decodes to the zero Position.
func DecodePosition(s string) (Position, error) {
	var p Position
	if s == "" {
		return p, nil
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("decode checkpoint: %w", err)
	}
	return p, nil
}

// Describe returns the position as a person reads it for the given style:
// "page 3", "offset 200", "cursor abc", a URL, or a mark ("start" for none
// or an unknown style). r redacts secrets that a next URL may carry.
func (p Position) Describe(style string, r *Redactor) string {
	s := styleOf(style).describe(p, r)
	switch {
	case p.Parent == noParents:
		return "no parent rows (end)"
	case p.Parent != "" && p.End:
		return fmt.Sprintf("parent %d (%s) (end)", p.Win+1, p.Parent)
	case p.Parent != "":
		s = fmt.Sprintf("parent %d (%s), %s", p.Win+1, p.Parent, s)
	case p.Win > 0 || p.Fly != "":
		s = fmt.Sprintf("window %d, %s", p.Win+1, s)
	}
	if ws, err := decodeWindows(p); err == nil && len(ws.Pos) > 0 {
		what := "windows"
		if p.Parent != "" {
			what = "parents"
		}
		s += fmt.Sprintf(" (+%d %s in flight)", len(ws.Pos), what)
	}
	if p.End {
		s += " (end)"
	}
	return s
}

// ParsePosition reads a user-given position (replay --from/--to) for a
// style: a page number, an offset, a cursor token, a next URL, or a mark.
// It fails for a value the style cannot read, and for none or an unknown
// style.
func ParsePosition(style, v string) (Position, error) {
	if !knownStyle(style) {
		return Position{}, fmt.Errorf("style %s has no positions to replay from", style)
	}
	return styleOf(style).parse(strings.TrimSpace(v))
}

// lastBefore reports whether the page at pos is the last one a replay
// bounded by to re-reads, next being the position after it: for page,
// offset and hwm styles when next lies past to (a mark equal to to may
// still have records to come); for cursor and link styles when pos is to
// itself (URLs compared whatever the order of their query parameters).
func lastBefore(style string, pos, next, to Position) bool {
	return styleOf(style).lastBefore(pos, next, to)
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
	ua.RawQuery, ub.RawQuery = ua.Query().Encode(), ub.Query().Encode()
	return ua.String() == ub.String()
}
