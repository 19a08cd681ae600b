package sync

import (
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// Job is a loaded, validated job: the spec with defaults filled in, paths
// resolved against the job file's folder, and the derived target table.
type Job struct {
	spec.Spec
	File      string         // absolute path of the job file; "" when loaded from bytes
	StatePath string         // absolute state file path (before --state / IDEMSYNC_STATE)
	Table     contract.Table // target table; Columns empty when they are inferred
	Infer     bool           // columns are inferred from the records (target.columns omitted)
	Secrets   *Redactor
	// Parent is the parent resource of a child resource (docs/job-file.md,
	// "Parent → child fan-out"): the job is walked once per parent row. nil for
	// any other job.
	Parent *ParentSpec
}

// Defaults of the job file, filled in by the loader (package jobfile).
const (
	DefaultStateFile   = ".idemsync/state.db"
	DefaultRetention   = 30 * 24 * time.Hour // runs and page rows kept by the automatic prune
	DefaultTimeout     = 30 * time.Second
	DefaultMaxBody     = 64 << 20
	DefaultAttempts    = 5
	DefaultMinWait     = time.Second
	DefaultMaxWait     = 30 * time.Second
	DefaultOnBadRecord = "fail"
)

// DefaultRetryStatus is the default retry.on_status list.
var DefaultRetryStatus = []int{408, 425, 429, 500, 502, 503, 504}
