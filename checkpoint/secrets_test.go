package checkpoint

import (
	"context"
	"testing"
)

// A state file written before tokens were kept per credential holds one
// token per resource (the shared-credential bug: one rotated, one the
// spent seed left pending). Migrated, the credential adopts the rotated
// one and the old rows go; DropRefreshTokens removes credentials the job
// file no longer uses, but not old rows whose seed it still uses.
func TestRefreshTokensPerCredential(t *testing.T) {
	ctx := context.Background()
	s, db := unmigratedStore(t)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []migration
	for _, m := range ms {
		if m.version < 13 {
			before = append(before, m)
		}
	}
	if err := s.migrateTo(ctx, before); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]any{
		{"shop.invoices", "seedhash", "rotated", 0, "2026-01-01T00:00:02Z"},
		{"shop.contacts", "seedhash", "seed", 1, "2026-01-01T00:00:03Z"},
		{"shop.other", "otherseed", "other", 0, "2026-01-01T00:00:01Z"},
		{"shopping", "seedhash", "not-this-file", 0, "2026-01-01T00:00:04Z"},
	} {
		if _, err := db.Exec(`INSERT INTO auth_tokens (job, seed_hash, token, pending, updated_at) VALUES (?, ?, ?, ?, ?)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.migrateTo(ctx, ms); err != nil {
		t.Fatal(err)
	}
	tok, pending, err := s.LoadRefreshToken(ctx, "shop", "cred-1", "seedhash")
	if err != nil || tok != "rotated" || pending {
		t.Fatalf("adopted %q pending %v, %v: want the rotated token, not pending", tok, pending, err)
	}
	if err := s.SaveRefreshToken(ctx, "shop", "cred-1", "seedhash", "rotated-2", false); err != nil {
		t.Fatal(err)
	}
	if tok, _, err = s.LoadRefreshToken(ctx, "shop", "cred-1", "seedhash"); err != nil || tok != "rotated-2" {
		t.Fatalf("after a save: %q, %v", tok, err)
	}
	// cred-2 is in the file (seed otherseed), not adopted yet: its old row stays.
	n, err := s.DropRefreshTokens(ctx, "shop", []string{"cred-1", "cred-2"}, []string{"seedhash", "otherseed"})
	if err != nil || n != 0 {
		t.Fatalf("dropped %d, %v: want none", n, err)
	}
	if n, err = s.DropRefreshTokens(ctx, "shop", []string{"cred-1"}, []string{"seedhash"}); err != nil || n != 1 {
		t.Fatalf("dropped %d, %v: want the old row of the seed no longer used", n, err)
	}
	var left []string
	rows, err := db.Query(`SELECT job || '/' || credential || '/' || token FROM auth_credentials ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		left = append(left, v)
	}
	want := []string{"shop/cred-1/rotated-2", "shopping/legacy/not-this-file"}
	if len(left) != 2 || left[0] != want[0] || left[1] != want[1] {
		t.Errorf("rows left %q, want %q", left, want)
	}
}
