package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/serve"
)

// serve parses --jobs and --listen (default 127.0.0.1:8787) with the
// global flags; an argument is a usage error.
func TestServeOptions(t *testing.T) {
	p := parseCmd(t, newCmdServe, "serve", "--jobs", "jobs", "--state", "s.db", "-q")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if o := p.opts; o.jobs != "jobs" || o.listen != "127.0.0.1:8787" || o.g.state != "s.db" || !o.g.quiet {
		t.Errorf("serve options: jobs %q listen %q state %q quiet %v", o.jobs, o.listen, o.g.state, o.g.quiet)
	}
	p = parseCmd(t, newCmdServe, "serve", "jobs")
	if p.err == nil || exitCode(p.err) != exitUsage {
		t.Errorf("serve with an argument: %v, want a usage error", p.err)
	}
}

// The backend answers as the commands print with --json: a missing job
// file is run's error object (exit 2); a claim with only a key takes the
// flags' defaults (namespace default, a 10-minute lease) on the state
// file of --state.
func TestServeBackend(t *testing.T) {
	dir := t.TempDir()
	var errOut bytes.Buffer
	b := &serveBackend{g: &globalOpts{state: filepath.Join(dir, "state.db"), quiet: true, logFormat: "text", logLevel: "info"},
		ios: &IOStreams{ErrOut: &errOut}}
	r := b.Run(context.Background(), filepath.Join(dir, "missing.yaml"), serve.RunOptions{}, func() { t.Error("a run that never started called started") })
	var res map[string]any
	if err := json.Unmarshal(r.Body, &res); err != nil || r.Code != exitUsage || res["status"] != "failed" || res["exit_code"] != float64(exitUsage) {
		t.Errorf("run of a missing file: exit %d %s (%v)", r.Code, r.Body, err)
	}
	r = b.Key(context.Background(), "claim", serve.KeyRequest{Key: "k"})
	var k struct {
		Status, NS, Token string
		ExpiresAt         string `json:"expires_at"`
	}
	if err := json.Unmarshal(r.Body, &k); err != nil || r.Code != exitOK || k.Status != "acquired" || k.NS != "default" || k.Token == "" || k.ExpiresAt == "" {
		t.Errorf("claim with a key only: exit %d %s (%v)", r.Code, r.Body, err)
	}
	r = b.Key(context.Background(), "complete", serve.KeyRequest{Key: "k", Token: k.Token})
	if err := json.Unmarshal(r.Body, &k); err != nil || k.Status != "completed" {
		t.Errorf("complete without a result: exit %d %s", r.Code, r.Body)
	}
}
