package sync

import (
	"testing"
	"time"
)

// An incremental run never saves a timestamp mark past its own start (whole
// seconds): an update made while the walk ran may sit behind its position.
func TestIncrementalSavedMark(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 0, 7, 600_000_000, time.UTC)
	for _, tt := range []struct{ max, want string }{
		{"", ""},
		{"2026-03-01T11:00:00Z", "2026-03-01T11:00:00Z"},           // before the start: as seen
		{"2026-03-01T12:00:07Z", "2026-03-01T12:00:07Z"},           // the start's second
		{"2026-03-01T12:00:07.5Z", "2026-03-01T12:00:07.0Z"},       // within it: capped, in the mark's form
		{"2026-03-01T12:30:00Z", "2026-03-01T12:00:07Z"},           // updated during the run
		{"2099-01-01T00:00:00Z", "2026-03-01T12:00:07Z"},           // far future
		{"2026-03-01T15:00:00+02:00", "2026-03-01T14:00:07+02:00"}, // an offset, after the start: its form kept
		{"2026-03-01T14:00:00+02:00", "2026-03-01T14:00:00+02:00"}, // an offset, before it
		{"1700000000", "1700000000"},                               // numbers: no clock
	} {
		if got := incrementalSavedMark(tt.max, started); got != tt.want {
			t.Errorf("incrementalSavedMark(%q) = %q, want %q", tt.max, got, tt.want)
		}
	}
}
