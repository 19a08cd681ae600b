package sync

import "testing"

func TestLastBefore(t *testing.T) {
	tests := []struct {
		style         string
		pos, next, to Position
		want          bool
	}{
		{StylePage, Position{Page: 3}, Position{Page: 4}, Position{Page: 4}, false},
		{StylePage, Position{Page: 4}, Position{Page: 5}, Position{Page: 4}, true},
		{StyleOffset, Position{Offset: 25}, Position{Offset: 50}, Position{Offset: 40}, true},
		{StyleOffset, Position{Offset: 25}, Position{Offset: 50}, Position{Offset: 50}, false},
		// A page ending on the --to mark may not hold every record at it.
		{StyleHWM, Position{Mark: "5"}, Position{Mark: "10"}, Position{Mark: "10"}, false},
		{StyleHWM, Position{Mark: "5"}, Position{Mark: "2024-01-01T00:00:00Z"}, Position{Mark: "2024-01-01T01:00:00+02:00"}, true},
		{StyleCursor, Position{Cursor: "b"}, Position{Cursor: "c"}, Position{Cursor: "b"}, true},
		{StyleCursor, Position{Cursor: "a"}, Position{Cursor: "b"}, Position{Cursor: "b"}, false},
		{StyleCursor, Position{}, Position{Cursor: "a"}, Position{Cursor: "b"}, false},
		{StyleLink, Position{URL: "https://a/x?page=4&per_page=25"}, Position{URL: "https://a/x?page=5"}, Position{URL: "https://a/x?per_page=25&page=4"}, true},
		{StyleLink, Position{URL: "https://a/x?page=3&per_page=25"}, Position{}, Position{URL: "https://a/x?per_page=25&page=4"}, false},
		{StyleLink, Position{URL: "https://a/y?page=4"}, Position{}, Position{URL: "https://a/x?page=4"}, false},
		{StyleCursor, Position{URL: "https://a/x?c=1"}, Position{}, Position{URL: "https://a/x?c=1"}, true},
	}
	for _, tt := range tests {
		if got := lastBefore(tt.style, tt.pos, tt.next, tt.to); got != tt.want {
			t.Errorf("lastBefore(%s, %+v, %+v, %+v) = %v, want %v", tt.style, tt.pos, tt.next, tt.to, got, tt.want)
		}
	}
}
