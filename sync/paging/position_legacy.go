package paging

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// legacyAt is a style's position as format 1 stored it: one union of the
// fields of every style. Each style reads its own fields from it
// (Style.legacy).
type legacyAt struct {
	Page   int64  `json:"page,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	URL    string `json:"url,omitempty"`
	Mark   string `json:"mark,omitempty"`
	Size   int    `json:"size,omitempty"`
}

// legacyPosition is a position as format 1 stored it: the style's fields
// and the envelope side by side, the windows in flight a JSON string.
type legacyPosition struct {
	legacyAt
	End    bool   `json:"end,omitempty"`
	Win    int    `json:"win,omitempty"`
	Fly    string `json:"fly,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// legacyFlight is format 1's windows in flight.
type legacyFlight struct {
	Flight
	Pos map[string]legacyAt `json:"pos,omitempty"`
}

// decodeLegacy reads a format 1 position for style: the job's, or "" to
// take the first style of the table whose fields it sets (none when it
// sets none), as status without the job file always did.
func decodeLegacy(style string, b []byte) (Position, error) {
	var l legacyPosition
	if err := json.Unmarshal(b, &l); err != nil {
		return Position{}, fmt.Errorf("decode checkpoint: %w", err)
	}
	st := legacyStyle(style, l.legacyAt)
	at, _ := st.legacy(l.legacyAt)
	p := Position{At: at, Win: l.Win, Parent: l.Parent, End: l.End}
	if l.Fly == "" {
		return p, nil
	}
	var f legacyFlight
	if err := json.Unmarshal([]byte(l.Fly), &f); err != nil {
		return Position{}, fmt.Errorf("decode windows in flight: %w", err)
	}
	ws := f.Flight
	for k, a := range f.Pos {
		i, err := strconv.Atoi(k)
		if err != nil {
			return Position{}, fmt.Errorf("decode windows in flight: bad window %q", k)
		}
		if ws.Pos == nil {
			ws.Pos = map[int]At{}
		}
		ws.Pos[i], _ = st.legacy(a)
	}
	p.Fly = &ws
	return p, nil
}

// legacyStyle is the style a format 1 position is read with.
func legacyStyle(style string, a legacyAt) Style {
	if Known(style) {
		return Of(style)
	}
	for _, s := range styleTable {
		if _, holds := s.legacy(a); holds {
			return s
		}
	}
	return nonePaging{}
}
