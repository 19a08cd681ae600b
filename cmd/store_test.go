package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A state URL of a database idemsync keeps no state in is invalid usage
// (exit 2) naming it without its password; a postgres URL is never taken
// for a missing file, and is printed without its password.
func TestStateURLs(t *testing.T) {
	_, err := openStore(context.Background(), "mysql://u:s3cret@db/x", nil)
	if contract.ClassOf(err) != contract.Invalid || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "mysql://u:xxxxx@db/x") {
		t.Errorf("openStore(mysql://…) = %v, want exit 2 naming the redacted URL", err)
	}
	pg := "postgres://u:s3cret@db/x?schema=s"
	if stateMissing(pg) {
		t.Error("stateMissing took a postgres URL for a missing file")
	}
	for name, got := range map[string]string{"stateName": stateName(pg), "realPath": realPath(pg)} {
		if strings.Contains(got, "s3cret") || !strings.Contains(got, "db/x") {
			t.Errorf("%s(%s) = %s", name, pg, got)
		}
	}
}
