package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Two job files with one name writing two tables of one database (each
// from its own state file) keep one feed, and a single-resource job's
// resource is its name: the second file's rows were recorded under the
// first one's resource, with the same keys and, for the same content, the
// same ledger keys. A consumer of the feed could not tell them apart: it
// acted on the other file's rows as its own, or zero times on those
// whose content matched rows it had acted on. The second file's run is
// refused (exit 2) before it writes, naming the table that records the
// resource, and the feed keeps the first file's events alone
// (docs/changes.md).
func TestOneResourceOneTable(t *testing.T) {
	_, urlA := startAPI(t, fakeapi.Options{Records: 30, Seed: 1})
	_, urlB := startAPI(t, fakeapi.Options{Records: 30, Seed: 2})
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			dir := t.TempDir()
			specA := changesSpec(t, db, dir, urlA)
			jobA := writeJob(t, dir, "a.yaml", specA)
			runCode(t, dir, nil, 0, "run", jobA)

			// The same name, another table of the same database, another
			// state file (its own folder).
			dirB := filepath.Join(dir, "b")
			if err := os.Mkdir(dirB, 0o700); err != nil {
				t.Fatal(err)
			}
			specB := regexp.MustCompile(`(?m)^(  table: .*orders)$`).ReplaceAllString(strings.Replace(specA, urlA, urlB, 1), "${1}_b")
			if specB == specA || !strings.Contains(specB, "orders_b") {
				t.Fatalf("the second job file is not another table:\n%s", specB)
			}
			jobB := writeJob(t, dirB, "b.yaml", specB)
			r := idemsync(t, dirB, nil, "run", jobB)
			if r.code != 2 || !strings.Contains(r.stderr, "orders-page") || !regexp.MustCompile(`table \S*orders\b`).MatchString(r.stderr) {
				var st feed.Report
				changesOut(t, dir, 0, &st, "changes", "status", jobA)
				t.Fatalf("a second job file of the same name on another table: exit %d, want 2 naming the job and the table orders; the feed now holds %d events under one resource (30 were the first file's)\n%s", r.code, st.Events, r.stderr)
			}
			var st feed.Report
			changesOut(t, dir, 0, &st, "changes", "status", jobA)
			if st.Events != 30 {
				t.Fatalf("the feed holds %d events, want the first file's 30", st.Events)
			}
			runCode(t, dir, nil, 0, "run", jobA) // the first file runs on
		})
	}
}
