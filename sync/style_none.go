package sync

import (
	"fmt"
	"net/url"

	"github.com/idemsync/idemsync/contract"
)

// StyleNone fetches source.url once: the one page is the whole source.
const StyleNone = "none"

// nonePaging is the none style, and the style of an unknown name.
type nonePaging struct{}

func (nonePaging) traits() styleTraits { return styleTraits{name: StyleNone} }

// fill has nothing to fill: none uses no key of pagingKeys.
func (nonePaging) fill(*Pagination, badFunc) {}

func (nonePaging) start(Pagination, string) Position { return Position{} }

func (nonePaging) request(Pagination, Position, url.Values) string { return "" }

func (nonePaging) step(_ *pager, pos Position, _ *contract.Response, _ string, _ ownEnd, _ string) (Position, ownEnd, string, error) {
	return pos, styleEnd, "is the only page", nil
}

func (nonePaging) describe(Position, *Redactor) string { return "start" }

func (nonePaging) parse(string) (Position, error) {
	return Position{}, fmt.Errorf("style %s has no positions to replay from", StyleNone)
}

func (nonePaging) lastBefore(pos, _, to Position) bool { return sameAt(pos, to) }

func (nonePaging) holds(Position) bool { return false }
