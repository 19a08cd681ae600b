package pgstate

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/checkpoint/statedump"
	"github.com/idemsync/idemsync/checkpoint/storetest"
)

// A state moves from a SQLite file to PostgreSQL and back unchanged: each
// import exports what the other store exported.
func TestDumpAcrossStores(t *testing.T) {
	ctx := context.Background()
	file, err := checkpoint.Open(ctx, filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	storetest.Populate(t, file)
	fromFile, err := file.Export(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fromFile.Tables["run_children"]); n != 1 {
		t.Fatalf("the dump holds %d child table counts, want Populate's 1", n)
	}
	if n := len(fromFile.Tables["run_schema_discards"]); n != 1 {
		t.Fatalf("the dump holds %d runs' schema discards, want Populate's 1", n)
	}
	pg := openTest(t, newSchema(t, url.Values{}))
	defer pg.Close()
	if err := pg.Import(ctx, fromFile); err != nil {
		t.Fatal(err)
	}
	fromPG, err := pg.Export(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if same, which := statedump.Equal(fromFile, fromPG); !same {
		t.Fatalf("SQLite to PostgreSQL: %s differs", which)
	}
	back, err := checkpoint.Open(ctx, filepath.Join(t.TempDir(), "back.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if err := back.Import(ctx, fromPG); err != nil {
		t.Fatal(err)
	}
	again, err := back.Export(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if same, which := statedump.Equal(fromPG, again); !same {
		t.Fatalf("PostgreSQL to SQLite: %s differs", which)
	}
}
