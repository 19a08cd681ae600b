package sqlite

import "time"

// sqliteTimeLayout is the one form the SQLite sink stores timestamps in:
// UTC, RFC 3339 with always nine fractional digits, so that text order is
// time order.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime renders a timestamp the way the SQLite sink stores it
// (sqliteTimeLayout), e.g. 2024-05-01T12:00:00.500000000Z.
func formatTime(t time.Time) string {
	return t.UTC().Format(sqliteTimeLayout)
}
