package sync

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// StyleNone fetches source.url once: the one page is the whole source.
const StyleNone = "none"

// nonePaging is the none style, and the style of an unknown name.
type nonePaging struct{}

// noneAt is the none style's one position: source.url.
type noneAt struct{}

func (noneAt) Style() string { return StyleNone }

func (nonePaging) traits() styleTraits { return styleTraits{name: StyleNone} }

// fill has nothing to fill: none uses no key of pagingKeys.
func (nonePaging) fill(*Pagination, badFunc) {}

func (nonePaging) start(Pagination, string) At { return noneAt{} }

func (nonePaging) request(Pagination, At, url.Values) string { return "" }

func (nonePaging) step(in stepIn) (stepOut, error) {
	return stepOut{next: in.pos, own: styleEnd, why: "is the only page"}, nil
}

func (nonePaging) describe(At, *Redactor) string { return "start" }

func (nonePaging) parse(string) (At, error) {
	return noneAt{}, fmt.Errorf("style %s has no positions to replay from", StyleNone)
}

// lastBefore: none has one page, the last of any walk.
func (nonePaging) lastBefore(_, _, _ At) bool { return false }

func (nonePaging) decode(json.RawMessage) (At, error) { return noneAt{}, nil }

func (nonePaging) legacy(legacyAt) (At, bool) { return noneAt{}, false }
