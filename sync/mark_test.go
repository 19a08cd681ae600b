package sync

import (
	"testing"
	"time"

	"github.com/idemsync/idemsync/sync/paging"
)

func FuzzCheckMark(f *testing.F) {
	for _, s := range []string{
		"2024-01-01T02:00:00+02:00", "2024-01-01T00:00:00.500Z", "0000-01-01T00:30:00+01:00",
		"9999-12-31T23:30:00-01:00", "100", "-2.50", "1e3", "0x1F", "1/3", "yesterday", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := paging.CheckMark(s)
		if err != nil {
			return
		}
		again, err := paging.CheckMark(n)
		if err != nil || again != n {
			t.Fatalf("CheckMark(%q) = %q, which checks as %q, %v", s, n, again, err)
		}
		if paging.CompareMarks(n, n) != 0 || paging.CompareMarks("", n) >= 0 || paging.CompareMarks(n, "") <= 0 {
			t.Fatalf("CompareMarks is not an order on %q", n)
		}
		if m, err := paging.SubtractOverlap(n, "1h"); err == nil {
			if _, err := paging.CheckMark(m); err != nil || paging.CompareMarks(m, n) > 0 {
				t.Fatalf("SubtractOverlap(%q, 1h) = %q: %v", n, m, err)
			}
		}
	})
}

// Marks keep the form the API wrote: a string-comparing API loses records
// tied on a mark whose form was rewritten.
func TestMarksVerbatim(t *testing.T) {
	for _, tc := range []struct{ mark, overlap, want string }{
		{"2024-01-01T01:18:00.000Z", "", "2024-01-01T01:18:00.000Z"},
		{"2024-01-01T01:18:00.000Z", "10m", "2024-01-01T01:08:00.000Z"},
		{"2024-01-01T01:18:00.123456Z", "1m", "2024-01-01T01:17:00.123456Z"},
		{"2024-01-01T01:18:00+02:00", "1h", "2024-01-01T00:18:00+02:00"},
		{"2024-01-01T01:18:00.5-05:30", "30s", "2024-01-01T01:17:30.5-05:30"},
		{"2024-01-01T01:18:00Z", "1.5s", "2024-01-01T01:17:58Z"}, // cut to the sample's precision: earlier, never later
		// Moved back past year 0 in the mark's own zone: the earliest instant
		// RFC 3339 writes in that zone, never a later one.
		{"0000-01-01T00:00:00-01:00", "1h", "0000-01-01T00:00:00-01:00"},
		{"0000-01-01T00:30:00+01:00", "1h", "0000-01-01T00:00:00+01:00"},
		{"0000-01-01T00:30:00Z", "1h", "0000-01-01T00:00:00Z"},
	} {
		got, err := paging.SubtractOverlap(tc.mark, tc.overlap)
		if err != nil || got != tc.want {
			t.Errorf("SubtractOverlap(%q, %q) = %q, %v; want %q", tc.mark, tc.overlap, got, err, tc.want)
		}
	}
	if c := paging.CompareMarks("2024-01-01T01:18:00.000Z", "2024-01-01T03:18:00+02:00"); c != 0 {
		t.Errorf("the same instant in two forms compares %d", c)
	}
	if c := paging.CompareMarks("2024-01-01T01:18:00.000Z", "2024-01-01T01:18:00Z"); c != 0 {
		t.Errorf("the same instant at two precisions compares %d", c)
	}
	started := time.Date(2024, 1, 1, 0, 0, 30, 700, time.UTC)
	if got := incrementalSavedMark("2024-01-01T00:05:00.000Z", started); got != "2024-01-01T00:00:30.000Z" {
		t.Errorf("capped saved mark = %q, want the run's start in the mark's form", got)
	}
}

func TestFormatMark(t *testing.T) {
	const m = "2024-03-09T19:04:05.987+02:00"
	for _, tc := range []struct{ format, want string }{
		{"", m}, {paging.FormatAsReceived, m},
		{paging.FormatRFC3339, "2024-03-09T17:04:05Z"},
		{paging.FormatDate, "2024-03-09"},
		{paging.FormatUnix, "1710003845"},
		{paging.FormatUnixMS, "1710003845987"},
		{"2006-01-02 15:04:05", "2024-03-09 17:04:05"},
	} {
		if err := paging.CheckMarkFormat(tc.format); tc.format != "" && err != nil {
			t.Errorf("CheckMarkFormat(%q): %v", tc.format, err)
		}
		got, err := paging.FormatMark(m, tc.format)
		if err != nil || got != tc.want {
			t.Errorf("FormatMark(%q) = %q, %v; want %q", tc.format, got, err, tc.want)
		}
	}
	if got, err := paging.FormatMark("1700000000", paging.FormatUnix); err != nil || got != "1700000000" {
		t.Errorf("numeric mark under unix = %q, %v", got, err)
	}
	if _, err := paging.FormatMark("1700000000", paging.FormatRFC3339); err == nil {
		t.Error("a numeric mark was written as rfc3339")
	}
	for _, bad := range []string{"iso", "15:04", "yyyy-mm-dd"} {
		if err := paging.CheckMarkFormat(bad); err == nil {
			t.Errorf("CheckMarkFormat(%q) accepted", bad)
		}
	}
}

// A window's upper bound is written rounded up: the window sent never
// ends before its bound. A bound the format writes exactly stays.
func TestFormatEnd(t *testing.T) {
	const m = "2024-03-09T19:04:05.987+02:00"
	for _, tc := range []struct{ end, format, want string }{
		{m, "", m}, {m, paging.FormatAsReceived, m},
		{m, paging.FormatRFC3339, "2024-03-09T17:04:06Z"},
		{m, paging.FormatDate, "2024-03-10"},
		{m, paging.FormatUnix, "1710003846"},
		{m, paging.FormatUnixMS, "1710003845987"},
		{m, "2006-01-02 15:04:05", "2024-03-09 17:04:06"},
		{m, "2006-01-02 15:04", "2024-03-09 17:05"},
		{m, "2006-01", "2024-04"},
		{"2024-03-10T00:00:00Z", paging.FormatDate, "2024-03-10"},
		{"2024-03-09T17:04:06Z", paging.FormatRFC3339, "2024-03-09T17:04:06Z"},
		{"1710003846", paging.FormatUnix, "1710003846"},
	} {
		got, err := paging.FormatEnd(tc.end, tc.format)
		if err != nil || got != tc.want {
			t.Errorf("FormatEnd(%q, %q) = %q, %v; want %q", tc.end, tc.format, got, err, tc.want)
		}
	}
}
