package sync

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// testJob decodes a job spec for the engine's own tests and fills the
// defaults the engine reads. The binary loads jobs with package jobfile
// (which imports this package, so these tests cannot use it); jobfile's
// tests cover the loader, and the end-to-end tests cover both together.
// Only specs without ${VAR} and without secrets are accepted here.
func testJob(t *testing.T, yml string) *Job {
	t.Helper()
	var s spec.Spec
	if err := yaml.Unmarshal([]byte(yml), &s); err != nil {
		t.Fatalf("decode spec: %v\n%s", err, yml)
	}
	j := &Job{Spec: s, File: filepath.Join(t.TempDir(), "job.yaml"), Secrets: NewRedactor()}
	var problems []string
	bad := func(key, format string, args ...any) {
		problems = append(problems, key+": "+fmt.Sprintf(format, args...))
	}
	src := &j.Source
	if src.Method == "" {
		src.Method = http.MethodGet
	}
	if src.Timeout.Duration == 0 {
		src.Timeout.Duration = DefaultTimeout
	}
	if src.MaxBody == 0 {
		src.MaxBody = DefaultMaxBody
	}
	if src.Concurrency == 0 {
		src.Concurrency = 1
	}
	paging.FillPagination(&j.Pagination, src.Concurrency, bad)
	if inc := j.Incremental; inc != nil {
		if inc.Format == "" {
			inc.Format = paging.FormatAsReceived
		}
		if inc.MaxFuture.Duration == 0 {
			inc.MaxFuture.Duration = paging.DefaultMaxFuture
		}
	}
	r := &j.Retry
	if r.Attempts == 0 {
		r.Attempts = DefaultAttempts
	}
	if r.MinWait.Duration == 0 {
		r.MinWait.Duration = DefaultMinWait
	}
	if r.MaxWait.Duration == 0 {
		r.MaxWait.Duration = max(DefaultMaxWait, r.MinWait.Duration)
	}
	if r.OnStatus == nil {
		r.OnStatus = DefaultRetryStatus
	}
	tg := &j.Target
	if tg.OnBadRecord == "" {
		tg.OnBadRecord = DefaultOnBadRecord
	}
	j.Table = contract.Table{Key: tg.Key, Version: tg.Version, Create: true, Name: tg.Table}
	if tg.Changes {
		j.Table.Changes = &contract.Changes{Job: j.Name, Resource: j.Name, Rows: tg.ChangesRows}
	}
	j.Infer = len(tg.Columns) == 0
	for _, c := range tg.Columns {
		if c.Path == "" {
			c.Path = c.Name
		}
		if c.Type == "" {
			c.Type = contract.TypeText
		}
		j.Table.Columns = append(j.Table.Columns, contract.Column{Name: c.Name, Path: c.Path, Type: c.Type, Parent: c.Parent})
	}
	if len(problems) > 0 {
		t.Fatalf("spec: %s\n%s", strings.Join(problems, "; "), yml)
	}
	return j
}
