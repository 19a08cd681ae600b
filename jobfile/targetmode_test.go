package jobfile

import (
	"github.com/idemsync/idemsync/contract"

	"strings"
	"testing"
)

func TestLoadTargetMode(t *testing.T) {
	withMode := func(url, mode string) string {
		s := strings.Replace(validSpec, "sqlite:out/orders.db", url, 1)
		return strings.Replace(s, "  key: [id]\n", "  key: [id]\n  mode: "+mode+"\n", 1)
	}
	job, err := Load([]byte(withMode("sqlite:out/orders.db", `"0640"`)), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if job.Target.Mode != "0640" || job.Target.FileMode() != 0o640 {
		t.Errorf("mode %q = %o, want 0640", job.Target.Mode, job.Target.FileMode())
	}
	job, err = Load([]byte(validSpec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if job.Target.FileMode() != contract.DefaultTargetMode {
		t.Errorf("default mode %o, want %o", job.Target.FileMode(), contract.DefaultTargetMode)
	}
	for _, tt := range []struct {
		name, spec string
		want       []string
	}{
		{"not octal", withMode("sqlite:out/orders.db", "rw-r-----"), []string{"line 17", "target.mode", "rw-r-----", "octal"}},
		{"too wide", withMode("sqlite:out/orders.db", `"01777"`), []string{"target.mode", "01777"}},
		{"not read-write for the owner", withMode("sqlite:out/orders.db", `"0440"`), []string{"target.mode", "0440", "read and write"}},
		{"postgres", withMode("postgres://u@db/x", `"0640"`), []string{"target.mode", "sqlite"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.spec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
			if err == nil {
				t.Fatal("no error")
			}
			if code := contract.ClassOf(err); code != contract.Invalid {
				t.Errorf("exit code %d, want 2", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
