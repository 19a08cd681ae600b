package checkpoint

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/sync/paging"
)

// The state file records the position format this build writes (migration
// 0018), and a build that predates it refuses the file as newer before it
// reads a position it would misread.
func TestPositionFormatRecorded(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, statePath(t), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT version FROM formats WHERE name = 'position'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != paging.PositionFormat {
		t.Errorf("state file records position format %d, this build writes %d: a new format needs its migration", v, paging.PositionFormat)
	}

	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var older []migration // the migrations a build before format 2 knows
	for _, m := range ms {
		if m.version < 18 {
			older = append(older, m)
		}
	}
	ver, err := schemaVersion(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	applied, _, err := appliedMigrations(ctx, s.db, ver, older)
	if err != nil {
		t.Fatal(err)
	}
	err = notNewer(ver, applied, older)
	if !errors.Is(err, errNewer) || !strings.Contains(err.Error(), "newer idemsync") {
		t.Errorf("a build without migration 18 opened a file holding format 2 positions: %v", err)
	}
}
