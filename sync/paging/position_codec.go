package paging

import (
	"encoding/json"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// PositionFormat is the version of the encoded position this build
// writes. Builds before it wrote format 1, which has no version: a union
// of every style's fields with the windows in flight as a JSON string
// inside it (position_legacy.go reads it). The state store records the
// format in its schema (checkpoint migration 0018), so an older build
// refuses a state file holding format 2 before it reads a position
// (docs/architecture.md, "Positions").
const PositionFormat = 2

// encodedPosition is a Position as stored: the style's name and its own
// position, then the envelope.
type encodedPosition struct {
	V      int             `json:"v"`
	Style  string          `json:"style,omitempty"`
	At     json.RawMessage `json:"at,omitempty"`
	Win    int             `json:"win,omitempty"`
	Parent string          `json:"parent,omitempty"`
	End    bool            `json:"end,omitempty"`
	Fly    *encodedFlight  `json:"fly,omitempty"`
}

// encodedFlight is Flight as stored: each window's position is the
// style's own (the same style as the envelope's).
type encodedFlight struct {
	Flight
	Pos map[int]json.RawMessage `json:"pos,omitempty"`
}

// Encode returns the stored form of p.
func (p Position) Encode() string {
	e := encodedPosition{V: PositionFormat, Win: p.Win, Parent: p.Parent, End: p.End}
	if p.At != nil {
		e.Style, e.At = p.At.Style(), encodeAt(p.At)
	}
	if p.Fly != nil {
		e.Fly = &encodedFlight{Flight: *p.Fly}
		if len(p.Fly.Pos) > 0 {
			e.Fly.Pos = map[int]json.RawMessage{}
			for k, a := range p.Fly.Pos {
				e.Fly.Pos[k] = encodeAt(a)
			}
		}
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// encodeAt is a style's position as stored: its type's JSON.
func encodeAt(a At) json.RawMessage {
	b, _ := json.Marshal(a)
	return b
}

// DecodePosition parses a stored Position. "" decodes to the zero
// Position. style is the job's pagination style ("" when the job file is
// not at hand): only a format 1 position, which does not say its style,
// needs it (without it the style is guessed from the fields set). A
// position of a newer format than this build's is an error.
func DecodePosition(style, s string) (Position, error) {
	if s == "" {
		return Position{}, nil
	}
	var v struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return Position{}, fmt.Errorf("decode checkpoint: %w", err)
	}
	switch {
	case v.V == nil:
		return decodeLegacy(style, []byte(s))
	case *v.V > PositionFormat:
		return Position{}, contract.Errorf(contract.Permanent, "decode checkpoint: position format %d was written by a newer idemsync (this build reads up to %d): upgrade idemsync", *v.V, PositionFormat)
	}
	var e encodedPosition
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return Position{}, fmt.Errorf("decode checkpoint: %w", err)
	}
	p := Position{Win: e.Win, Parent: e.Parent, End: e.End}
	var st Style
	if e.Style != "" {
		if !Known(e.Style) {
			return Position{}, fmt.Errorf("decode checkpoint: unknown pagination style %q", e.Style)
		}
		st = Of(e.Style)
		var err error
		if p.At, err = st.decode(e.At); err != nil {
			return Position{}, fmt.Errorf("decode checkpoint: %s position: %w", e.Style, err)
		}
	}
	if e.Fly != nil {
		ws := e.Fly.Flight
		if len(e.Fly.Pos) > 0 && st == nil {
			return Position{}, fmt.Errorf("decode windows in flight: no pagination style")
		}
		for k, b := range e.Fly.Pos {
			a, err := st.decode(b)
			if err != nil {
				return Position{}, fmt.Errorf("decode windows in flight: window %d: %w", k+1, err)
			}
			if ws.Pos == nil {
				ws.Pos = map[int]At{}
			}
			ws.Pos[k] = a
		}
		p.Fly = &ws
	}
	return p, nil
}
