package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  buildVersion
	}{
		{"ldflags win", "v2.0.0", "abc123", "2026-11-01", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"},
			Settings: vcs("vcs.revision", "fff", "vcs.time", "2020-01-01T00:00:00Z", "vcs.modified", "true")},
			buildVersion{Version: "v2.0.0", Commit: "abc123", Date: "2026-11-01"}},
		{"go install", "dev", "none", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "v2.1.0"}},
			buildVersion{Version: "v2.1.0", Commit: "none", Date: "unknown"}},
		{"go build in a checkout", "dev", "none", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123abcd", "vcs.time", "2026-11-22T10:00:00Z", "vcs.modified", "false")},
			buildVersion{Version: "dev", Commit: "0123abcd", Date: "2026-11-22T10:00:00Z"}},
		{"uncommitted changes", "dev", "none", "unknown", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123abcd", "vcs.modified", "true")},
			buildVersion{Version: "dev", Commit: "0123abcd-dirty", Date: "unknown"}},
		{"no build info", "dev", "none", "unknown", nil, buildVersion{Version: "dev", Commit: "none", Date: "unknown"}},
	} {
		got := versionFrom(c.version, c.commit, c.date, c.info, c.info != nil)
		got.Go = ""
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	flag := execute(t, false, "--version")
	cmd := execute(t, false, "version")
	if flag.code != 0 || cmd.code != 0 || !strings.HasPrefix(flag.stdout, "idemsync ") || flag.stdout != cmd.stdout {
		t.Errorf("--version %d %q, version %d %q: want the same line", flag.code, flag.stdout, cmd.code, cmd.stdout)
	}
}
