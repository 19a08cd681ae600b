package checkpoint

import "testing"

// 0012 drops the parent rows 0008 kept with every child run: a child run
// reads its parents from the parent table as it walks them, so the state
// file no longer grows by a copy of the parent table per run.
func TestNoParentCopies(t *testing.T) {
	s := openTemp(t)
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'run_parents'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("run_parents still in a migrated state file: %d, %v", n, err)
	}
}
