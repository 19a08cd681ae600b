package sync

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

func TestLastBefore(t *testing.T) {
	tests := []struct {
		style         string
		pos, next, to paging.Position
		want          bool
	}{
		{paging.StylePage, paging.Position{At: paging.PageAt{Page: 3}}, paging.Position{At: paging.PageAt{Page: 4}}, paging.Position{At: paging.PageAt{Page: 4}}, false},
		{paging.StylePage, paging.Position{At: paging.PageAt{Page: 4}}, paging.Position{At: paging.PageAt{Page: 5}}, paging.Position{At: paging.PageAt{Page: 4}}, true},
		{paging.StyleOffset, paging.Position{At: paging.OffsetAt{Offset: 25}}, paging.Position{At: paging.OffsetAt{Offset: 50}}, paging.Position{At: paging.OffsetAt{Offset: 40}}, true},
		{paging.StyleOffset, paging.Position{At: paging.OffsetAt{Offset: 25}}, paging.Position{At: paging.OffsetAt{Offset: 50}}, paging.Position{At: paging.OffsetAt{Offset: 50}}, false},
		// A page ending on the --to mark may not hold every record at it.
		{paging.StyleHWM, paging.Position{At: paging.HWMAt{Mark: "5"}}, paging.Position{At: paging.HWMAt{Mark: "10"}}, paging.Position{At: paging.HWMAt{Mark: "10"}}, false},
		{paging.StyleHWM, paging.Position{At: paging.HWMAt{Mark: "5"}}, paging.Position{At: paging.HWMAt{Mark: "2024-01-01T00:00:00Z"}}, paging.Position{At: paging.HWMAt{Mark: "2024-01-01T01:00:00+02:00"}}, true},
		{paging.StyleCursor, paging.Position{At: paging.CursorAt{Cursor: "b"}}, paging.Position{At: paging.CursorAt{Cursor: "c"}}, paging.Position{At: paging.CursorAt{Cursor: "b"}}, true},
		{paging.StyleCursor, paging.Position{At: paging.CursorAt{Cursor: "a"}}, paging.Position{At: paging.CursorAt{Cursor: "b"}}, paging.Position{At: paging.CursorAt{Cursor: "b"}}, false},
		{paging.StyleCursor, paging.Position{}, paging.Position{At: paging.CursorAt{Cursor: "a"}}, paging.Position{At: paging.CursorAt{Cursor: "b"}}, false},
		{paging.StyleLink, paging.Position{At: paging.LinkAt{URL: "https://a/x?page=4&per_page=25"}}, paging.Position{At: paging.LinkAt{URL: "https://a/x?page=5"}}, paging.Position{At: paging.LinkAt{URL: "https://a/x?per_page=25&page=4"}}, true},
		{paging.StyleLink, paging.Position{At: paging.LinkAt{URL: "https://a/x?page=3&per_page=25"}}, paging.Position{}, paging.Position{At: paging.LinkAt{URL: "https://a/x?per_page=25&page=4"}}, false},
		{paging.StyleLink, paging.Position{At: paging.LinkAt{URL: "https://a/y?page=4"}}, paging.Position{}, paging.Position{At: paging.LinkAt{URL: "https://a/x?page=4"}}, false},
		{paging.StyleCursor, paging.Position{At: paging.CursorAt{URL: "https://a/x?c=1"}}, paging.Position{}, paging.Position{At: paging.CursorAt{URL: "https://a/x?c=1"}}, true},
	}
	for _, tt := range tests {
		if got := paging.LastBefore(tt.style, tt.pos, tt.next, tt.to); got != tt.want {
			t.Errorf("lastBefore(%s, %+v, %+v, %+v) = %v, want %v", tt.style, tt.pos, tt.next, tt.to, got, tt.want)
		}
	}
}

// Every style's position, in its window or parent, reads back as written;
// the stored form says its style, so it reads back without the job's; a
// newer format is refused.
func TestPositionRoundTrip(t *testing.T) {
	fly := &paging.Flight{Pos: map[int]paging.At{3: paging.PageAt{Page: 2}, 5: paging.PageAt{Page: 1, Size: 10}}, Done: []int{4}, Started: 6}
	child := &paging.Flight{Pos: map[int]paging.At{2: paging.CursorAt{Cursor: "c2"}}, Started: 3,
		Rows: map[string]string{"1": `{"id":"42"}`, "2": `{"id":"43"}`}, Last: `{"id":"43"}`, Since: "2024-05-01T00:00:00Z"}
	for _, p := range []paging.Position{
		{},
		{At: paging.PageAt{Page: 3, Size: 7}},
		{At: paging.OffsetAt{Offset: 40}, End: true},
		{At: paging.CursorAt{Cursor: "abc"}},
		{At: paging.CursorAt{URL: "https://api.example.com/v1/orders?after=9"}},
		{At: paging.LinkAt{URL: "https://api.example.com/v1/orders?page=2"}},
		{At: paging.HWMAt{Mark: "2024-05-01T10:00:00Z", Size: 50}},
		{At: paging.NoneAt{}},
		{At: paging.PageAt{Page: 5}, Win: 2, Fly: fly},
		{At: paging.CursorAt{Cursor: "c9"}, Win: 1, Parent: "id=42", Fly: child},
		{Win: 4, End: true, Parent: "id=50"},
		{End: true, Parent: paging.NoParents},
	} {
		s := p.Encode()
		got, err := paging.DecodePosition("", s)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s decodes to %+v, %v; want %+v", s, got, err, p)
		}
	}
	_, err := paging.DecodePosition(paging.StylePage, `{"v":3,"style":"page","at":{"page":2}}`)
	if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), "newer idemsync") {
		t.Errorf("format 3: %v; want refused as written by a newer idemsync", err)
	}
}

// A format 1 position keeps what describing it does not show: the served
// size, and a child run's parent rows in flight.
func TestLegacyPositionFields(t *testing.T) {
	p, err := paging.DecodePosition(paging.StylePage, `{"page":3,"size":7}`)
	if err != nil || p.At != (paging.PageAt{Page: 3, Size: 7}) {
		t.Errorf("page with size: %+v, %v", p, err)
	}
	p, err = paging.DecodePosition(paging.StyleCursor, legacyPositions[21].stored)
	if err != nil || p.At != (paging.CursorAt{Cursor: "c9"}) || p.Fly == nil || p.Fly.Pos[2] != (paging.CursorAt{Cursor: "c2"}) ||
		p.Fly.Rows["2"] != `{"id":"43"}` || p.Fly.Last != `{"id":"43"}` || p.Fly.Since != "2024-05-01T00:00:00Z" || p.Fly.Started != 3 {
		t.Errorf("parent in flight: %+v %+v, %v", p, p.Fly, err)
	}
}
