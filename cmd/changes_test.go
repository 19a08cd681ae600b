package cmd

import (
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
)

// changes and its subcommands parse their flags into changesOptions and
// refuse bad usage (exit 2) before anything is opened.
func TestChangesFlags(t *testing.T) {
	p := parseCmd(t, newCmdChanges, "changes", "job.yaml", "--consumer", "mail", "--resource", "a,b", "--ops", "I,U", "--limit", "5", "--lease", "30s")
	if p.err != nil || p.opts.file != "job.yaml" || p.opts.consumer != "mail" || !slices.Equal(p.opts.resources, []string{"a", "b"}) ||
		!slices.Equal(p.opts.ops, []string{"I", "U"}) || p.opts.limit != 5 || p.opts.lease != 30*time.Second {
		t.Errorf("changes: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdChanges, "changes", "job.yaml", "--consumer", "x"); p.err != nil || p.opts.limit != feed.DefaultLimit || p.opts.lease != feed.DefaultLease {
		t.Errorf("changes' defaults: %v %+v", p.err, p.opts)
	}
	for _, args := range [][]string{
		{"changes", "job.yaml"},
		{"changes", "job.yaml", "--consumer", "x", "--ops", "X"},
		{"changes", "job.yaml", "--consumer", "x", "--limit", "0"},
		{"changes", "job.yaml", "--consumer", "x", "--lease", "0s"},
	} {
		if p := parseCmd(t, newCmdChanges, args...); p.code() != 2 || p.opts != nil {
			t.Errorf("%v: exit %d (ran %t), want 2", args, p.code(), p.opts != nil)
		}
	}
	if p := parseCmd(t, newCmdChangesAck, "ack", "job.yaml", "--consumer", "x", "--batch", "b1", "--through", "9"); p.err != nil || p.opts.batch != "b1" || p.opts.through != 9 {
		t.Errorf("ack: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdChangesAck, "ack", "job.yaml", "--consumer", "x"); p.code() != 2 {
		t.Errorf("ack without --batch: exit %d, want 2", p.code())
	}
	if p := parseCmd(t, newCmdChangesReset, "reset", "job.yaml", "--consumer", "x", "--to", "oldest"); p.err != nil || p.opts.to != "oldest" {
		t.Errorf("reset: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdChangesStatus, "status", "job.yaml"); p.err != nil || p.opts.file != "job.yaml" {
		t.Errorf("status: %v %+v", p.err, p.opts)
	}
}
