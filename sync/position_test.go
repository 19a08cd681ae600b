package sync

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

func TestLastBefore(t *testing.T) {
	tests := []struct {
		style         string
		pos, next, to Position
		want          bool
	}{
		{StylePage, Position{At: pageAt{Page: 3}}, Position{At: pageAt{Page: 4}}, Position{At: pageAt{Page: 4}}, false},
		{StylePage, Position{At: pageAt{Page: 4}}, Position{At: pageAt{Page: 5}}, Position{At: pageAt{Page: 4}}, true},
		{StyleOffset, Position{At: offsetAt{Offset: 25}}, Position{At: offsetAt{Offset: 50}}, Position{At: offsetAt{Offset: 40}}, true},
		{StyleOffset, Position{At: offsetAt{Offset: 25}}, Position{At: offsetAt{Offset: 50}}, Position{At: offsetAt{Offset: 50}}, false},
		// A page ending on the --to mark may not hold every record at it.
		{StyleHWM, Position{At: hwmAt{Mark: "5"}}, Position{At: hwmAt{Mark: "10"}}, Position{At: hwmAt{Mark: "10"}}, false},
		{StyleHWM, Position{At: hwmAt{Mark: "5"}}, Position{At: hwmAt{Mark: "2024-01-01T00:00:00Z"}}, Position{At: hwmAt{Mark: "2024-01-01T01:00:00+02:00"}}, true},
		{StyleCursor, Position{At: cursorAt{Cursor: "b"}}, Position{At: cursorAt{Cursor: "c"}}, Position{At: cursorAt{Cursor: "b"}}, true},
		{StyleCursor, Position{At: cursorAt{Cursor: "a"}}, Position{At: cursorAt{Cursor: "b"}}, Position{At: cursorAt{Cursor: "b"}}, false},
		{StyleCursor, Position{}, Position{At: cursorAt{Cursor: "a"}}, Position{At: cursorAt{Cursor: "b"}}, false},
		{StyleLink, Position{At: linkAt{URL: "https://a/x?page=4&per_page=25"}}, Position{At: linkAt{URL: "https://a/x?page=5"}}, Position{At: linkAt{URL: "https://a/x?per_page=25&page=4"}}, true},
		{StyleLink, Position{At: linkAt{URL: "https://a/x?page=3&per_page=25"}}, Position{}, Position{At: linkAt{URL: "https://a/x?per_page=25&page=4"}}, false},
		{StyleLink, Position{At: linkAt{URL: "https://a/y?page=4"}}, Position{}, Position{At: linkAt{URL: "https://a/x?page=4"}}, false},
		{StyleCursor, Position{At: cursorAt{URL: "https://a/x?c=1"}}, Position{}, Position{At: cursorAt{URL: "https://a/x?c=1"}}, true},
	}
	for _, tt := range tests {
		if got := lastBefore(tt.style, tt.pos, tt.next, tt.to); got != tt.want {
			t.Errorf("lastBefore(%s, %+v, %+v, %+v) = %v, want %v", tt.style, tt.pos, tt.next, tt.to, got, tt.want)
		}
	}
}

// Every style's position, in its window or parent, reads back as written;
// the stored form says its style, so it reads back without the job's; a
// newer format is refused.
func TestPositionRoundTrip(t *testing.T) {
	fly := &windowState{Pos: map[int]At{3: pageAt{Page: 2}, 5: pageAt{Page: 1, Size: 10}}, Done: []int{4}, Started: 6}
	child := &windowState{Pos: map[int]At{2: cursorAt{Cursor: "c2"}}, Started: 3,
		Rows: map[string]string{"1": `{"id":"42"}`, "2": `{"id":"43"}`}, Last: `{"id":"43"}`, Since: "2024-05-01T00:00:00Z"}
	for _, p := range []Position{
		{},
		{At: pageAt{Page: 3, Size: 7}},
		{At: offsetAt{Offset: 40}, End: true},
		{At: cursorAt{Cursor: "abc"}},
		{At: cursorAt{URL: "https://api.example.com/v1/orders?after=9"}},
		{At: linkAt{URL: "https://api.example.com/v1/orders?page=2"}},
		{At: hwmAt{Mark: "2024-05-01T10:00:00Z", Size: 50}},
		{At: noneAt{}},
		{At: pageAt{Page: 5}, Win: 2, Fly: fly},
		{At: cursorAt{Cursor: "c9"}, Win: 1, Parent: "id=42", Fly: child},
		{Win: 4, End: true, Parent: "id=50"},
		{End: true, Parent: noParents},
	} {
		s := p.Encode()
		got, err := DecodePosition("", s)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s decodes to %+v, %v; want %+v", s, got, err, p)
		}
	}
	_, err := DecodePosition(StylePage, `{"v":3,"style":"page","at":{"page":2}}`)
	if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), "newer idemsync") {
		t.Errorf("format 3: %v; want refused as written by a newer idemsync", err)
	}
}

// A format 1 position keeps what describing it does not show: the served
// size, and a child run's parent rows in flight.
func TestLegacyPositionFields(t *testing.T) {
	p, err := DecodePosition(StylePage, `{"page":3,"size":7}`)
	if err != nil || p.At != (pageAt{Page: 3, Size: 7}) {
		t.Errorf("page with size: %+v, %v", p, err)
	}
	p, err = DecodePosition(StyleCursor, legacyPositions[21].stored)
	if err != nil || p.At != (cursorAt{Cursor: "c9"}) || p.Fly == nil || p.Fly.Pos[2] != (cursorAt{Cursor: "c2"}) ||
		p.Fly.Rows["2"] != `{"id":"43"}` || p.Fly.Last != `{"id":"43"}` || p.Fly.Since != "2024-05-01T00:00:00Z" || p.Fly.Started != 3 {
		t.Errorf("parent in flight: %+v %+v, %v", p, p.Fly, err)
	}
}
