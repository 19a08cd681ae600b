package sync

import "testing"

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
