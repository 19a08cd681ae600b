package sqlite

import "github.com/idemsync/idemsync/contract"

// CheckRow accepts every row: SQLite stores any value the engine maps
// (text with NUL characters, keys of any size), so no record is a bad
// record for it alone.
func (s *Sink) CheckRow(*contract.Table, contract.Row) error { return nil }
