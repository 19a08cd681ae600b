package jobfile

import (
	"github.com/idemsync/idemsync/contract"

	"strings"
	"testing"
	"time"
)

func TestLoadTargetTimeout(t *testing.T) {
	spec := func(timeout string) []byte {
		return []byte(strings.Replace(validSpec, "  key: [id]\n", "  key: [id]\n"+timeout, 1))
	}
	job, err := Load(spec(""), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if tt := job.Target.Timeout; tt == nil || tt.Lock.Duration != contract.DefaultLockTimeout || tt.Statement.Duration != contract.DefaultStatementTimeout {
		t.Errorf("defaults: %+v, want lock 30s, statement 5m", tt)
	}
	job, err = Load(spec("  timeout: {lock: 2s, statement: 1m}\n"), "", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if tt := job.Target.Timeout; tt.Lock.Duration != 2*time.Second || tt.Statement.Duration != time.Minute {
		t.Errorf("set: %+v", tt)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"  timeout: {lock: soon}\n", "target.timeout.lock"},
		{"  timeout: {statement: -1s}\n", "target.timeout.statement"},
		{"  timeout: {lock: 500us}\n", "target.timeout.lock: 500µs is below"},
		{"  timeout: {statement: 10000h}\n", "target.timeout.statement: 10000h0m0s exceeds"},
		{"  timeout: {lokc: 1s}\n", "target.timeout.lokc"},
	} {
		_, err := Load(spec(tc.yaml), "", env(map[string]string{"API_TOKEN": "x"}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: error %v, want one naming %q and its line", tc.yaml, err, tc.want)
		}
	}
}
