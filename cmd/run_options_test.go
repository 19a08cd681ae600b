package cmd

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// run, resume and replay parse their flags into the engine's options; the
// flags one of them does not take, a wrong argument count and negative
// limits are usage errors (exit 2) before anything runs.
func TestRunOptions(t *testing.T) {
	p := parseCmd(t, newCmdRun, "run", "job.yaml", "--max-pages", "3", "--time-limit", "14m", "--restart", "--full",
		"--allow-mass-delete", "--verify", "--resource", "a", "--resource", "b", "--metrics-file", "m.prom", "--json", "-q")
	if p.err != nil {
		t.Fatal(p.err)
	}
	o := p.opts
	want := idsync.Options{Kind: contract.KindRun, MaxPages: 3, TimeLimit: 14 * time.Minute, Restart: true, Full: true, AllowMassDelete: true, Verify: true}
	if got := o.engineOptions(); got != want {
		t.Errorf("run options %+v, want %+v", got, want)
	}
	if o.file != "job.yaml" || o.metrics != "m.prom" || !slices.Equal(o.resources, []string{"a", "b"}) || !o.g.json || !o.g.quiet {
		t.Errorf("run: file %q, metrics %q, resources %v, json %v, quiet %v", o.file, o.metrics, o.resources, o.g.json, o.g.quiet)
	}

	p = parseCmd(t, newCmdResume, "resume", "job.yaml", "--state", "s.db", "--log-format", "json", "--log-level", "debug")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if got := p.opts.engineOptions(); got != (idsync.Options{Kind: contract.KindRun, Resume: true}) {
		t.Errorf("resume options %+v", got)
	}
	if g := p.opts.g; g.state != "s.db" || g.logFormat != "json" || g.logLevel != "debug" {
		t.Errorf("global flags %+v", g)
	}

	p = parseCmd(t, newCmdReplay, "replay", "job.yaml", "--from", "3", "--to", "9")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if got := p.opts.engineOptions(); got != (idsync.Options{Kind: contract.KindReplay, From: "3", To: "9"}) {
		t.Errorf("replay options %+v", got)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"run", nil, "accepts 1 arg"},
		{"run", []string{"a.yaml", "b.yaml"}, "accepts 1 arg"},
		{"run", []string{"a.yaml", "--bogus"}, "unknown flag: --bogus"},
		{"run", []string{"a.yaml", "--max-pages", "-1"}, "must not be negative"},
		{"run", []string{"a.yaml", "--time-limit", "-1s"}, "must not be negative"},
		{"run", []string{"a.yaml", "--max-pages", "x"}, "invalid argument"},
		{"run", []string{"a.yaml", "--from", "1"}, "unknown flag: --from"},
		{"resume", []string{"a.yaml", "--restart"}, "unknown flag: --restart"},
		{"resume", []string{"a.yaml", "--full"}, "unknown flag: --full"},
		{"replay", []string{"a.yaml"}, "replay needs --from"},
		{"replay", []string{"a.yaml", "--from", "1", "--allow-mass-delete"}, "unknown flag: --allow-mass-delete"},
	} {
		newCmd := map[string]func(*Factory, func(*runOptions) error) *cobra.Command{
			"run": newCmdRun, "resume": newCmdResume, "replay": newCmdReplay}[tc.cmd]
		p := parseCmd(t, newCmd, append([]string{tc.cmd}, tc.args...)...)
		if p.opts != nil || p.code() != exitUsage || !strings.Contains(p.err.Error(), tc.want) {
			t.Errorf("%s %v: ran %v, exit %d, %v; want exit 2 with %q", tc.cmd, tc.args, p.opts != nil, p.code(), p.err, tc.want)
		}
	}
}

// prune takes at most one job file and passes --keep as written (the
// command reads it with parseKeep).
func TestPruneOptions(t *testing.T) {
	p := parseCmd(t, newCmdPrune, "prune", "job.yaml", "--keep", "7d")
	if p.err != nil || p.opts.keep != "7d" || !slices.Equal(p.opts.args, []string{"job.yaml"}) {
		t.Errorf("prune: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdPrune, "prune"); p.err != nil || p.opts.keep != "30d" || len(p.opts.args) != 0 {
		t.Errorf("prune's default --keep: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdPrune, "prune", "a.yaml", "b.yaml"); p.opts != nil || p.code() != 2 {
		t.Errorf("prune with two job files: ran %v, exit %d", p.opts != nil, p.code())
	}
}

// show, claim and validate take one job file and their own flags; show's
// --limit below 1 is a usage error before anything is read.
func TestShowClaimValidateOptions(t *testing.T) {
	if p := parseCmd(t, newCmdShow, "show", "job.yaml", "--limit", "3", "--resource", "b"); p.err != nil ||
		p.opts.file != "job.yaml" || p.opts.limit != 3 || p.opts.resource != "b" {
		t.Errorf("show: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdShow, "show", "job.yaml"); p.err != nil || p.opts.limit != DefaultShowLimit {
		t.Errorf("show's default --limit: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdClaim, "claim", "job.yaml", "--resource", "a", "--resource", "b"); p.err != nil ||
		p.opts.file != "job.yaml" || !slices.Equal(p.opts.only, []string{"a", "b"}) {
		t.Errorf("claim: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdValidate, "validate", "job.yaml", "--connect"); p.err != nil || p.opts.file != "job.yaml" || !p.opts.connect {
		t.Errorf("validate: %v %+v", p.err, p.opts)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "job.yaml", "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"show"}, "accepts 1 arg"},
		{[]string{"claim", "a.yaml", "b.yaml"}, "accepts 1 arg"},
		{[]string{"validate", "job.yaml", "--full"}, "unknown flag: --full"},
	} {
		var ran bool
		var err error
		switch tc.args[0] {
		case "show":
			p := parseCmd(t, newCmdShow, tc.args...)
			ran, err = p.opts != nil, p.err
		case "claim":
			p := parseCmd(t, newCmdClaim, tc.args...)
			ran, err = p.opts != nil, p.err
		case "validate":
			p := parseCmd(t, newCmdValidate, tc.args...)
			ran, err = p.opts != nil, p.err
		}
		if ran || err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: ran %v, %v; want exit 2 with %q", tc.args, ran, err, tc.want)
		}
	}
}

// A bad $IDEMSYNC_IF_RUNNING is a usage error that names the variable, not
// a flag the command line does not have; --if-running overrides it.
func TestIfRunningFromEnvNamesTheVariable(t *testing.T) {
	t.Setenv("IDEMSYNC_IF_RUNNING", "bogus")
	p := parseCmd(t, newCmdRun, "run", "job.yaml")
	if p.opts != nil || p.code() != exitUsage || !strings.Contains(p.err.Error(), `$IDEMSYNC_IF_RUNNING "bogus"`) {
		t.Errorf("bad $IDEMSYNC_IF_RUNNING: ran %v, exit %d, %v; want exit 2 naming the variable", p.opts != nil, p.code(), p.err)
	}
	t.Setenv("IDEMSYNC_IF_RUNNING", "wait=0s")
	if p := parseCmd(t, newCmdRun, "run", "job.yaml"); p.err == nil || !strings.Contains(p.err.Error(), "$IDEMSYNC_IF_RUNNING wait=0s") {
		t.Errorf("$IDEMSYNC_IF_RUNNING=wait=0s: %v, want an error naming the variable", p.err)
	}
	p = parseCmd(t, newCmdRun, "run", "job.yaml", "--if-running", "skip")
	if p.err != nil || p.opts.gate.ifRunning != ifRunningSkip {
		t.Errorf("--if-running skip over a bad $IDEMSYNC_IF_RUNNING: %v", p.err)
	}
	if p := parseCmd(t, newCmdRun, "run", "job.yaml", "--if-running", "nope"); p.err == nil || !strings.Contains(p.err.Error(), `--if-running "nope"`) {
		t.Errorf("--if-running nope: %v, want an error naming the flag", p.err)
	}
}
