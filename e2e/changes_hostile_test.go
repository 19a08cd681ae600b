package e2e

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A careless consumer through the binary, on SQLite and PostgreSQL
// (docs/changes.md, "Batches, leases, acknowledgements"): an ack
// --through past its batch, or not past what it acknowledged, is refused
// (exit 2) and moves nothing — --through 0 too, which a script passing
// the last event it acted on sends when it acted on none, and which
// acknowledged the whole batch; a reset while a batch is out makes that
// batch's ack stale (exit 1); a batch whose lease ran out unreplaced is
// still acknowledged; a prune with --keep 0s deletes nothing a slow
// consumer holds unacknowledged in a lapsed batch, which it then reads
// again in full; a reset --to past the feed's last event is refused
// (exit 2). Every event reaches each consumer, none is skipped.
func TestChangesCarelessConsumer(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 30})
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			job := changesJob(t, name, dir, url)
			runCode(t, dir, nil, 0, "run", job)
			var b feed.Batch
			changesOut(t, dir, 0, &b, "changes", job, "--consumer", "mail", "--limit", "10")
			status := func() feed.ConsumerStatus {
				var st feed.Report
				changesOut(t, dir, 0, &st, "changes", "status", job)
				for _, c := range st.Consumers {
					if c.Name == "mail" {
						return c
					}
				}
				t.Fatalf("no consumer mail: %+v", st)
				return feed.ConsumerStatus{}
			}
			for _, through := range []int64{b.Through + 1, b.Through + 1000, b.After} {
				if r := idemsync(t, dir, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID, "--through", fmt.Sprint(through)); r.code != 2 || !strings.Contains(r.stderr, "--through") {
					t.Errorf("ack --through %d of batch %d..%d: exit %d, want 2\n%s", through, b.After+1, b.Through, r.code, r.stderr)
				}
			}
			// The same over HTTP: "through":0 is not the whole batch.
			s := startServe(t, dir, dir, nil)
			if code, body := s.do(t, "POST", "/jobs/job/changes/ack", `{"consumer":"mail","batch":"`+b.ID+`","through":0}`); code != 400 || !strings.Contains(body, `"exit_code":2`) {
				t.Errorf("ack through 0 over HTTP: %d %s, want 400", code, body)
			}
			if c := status(); c.Acked != 0 || c.Batch != b.ID {
				t.Fatalf("after the refused acks: %+v, want nothing moved", c)
			}
			changesOut(t, dir, 0, nil, "changes", "reset", job, "--consumer", "mail", "--to", "0")
			if r := idemsync(t, dir, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID); r.code != 1 || !strings.Contains(r.stderr, "stale") {
				t.Fatalf("ack of a batch out at the reset: exit %d, want 1 (stale)\n%s", r.code, r.stderr)
			}
			// A lapsed batch nobody replaced is still the consumer's.
			changesOut(t, dir, 0, &b, "changes", job, "--consumer", "mail", "--limit", "10", "--lease", "50ms")
			time.Sleep(150 * time.Millisecond)
			changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID, "--through", fmt.Sprint(b.Events[4].Seq))
			if c := status(); c.Acked != b.Events[4].Seq {
				t.Fatalf("after the lapsed batch's partial ack: %+v, want acked %d", c, b.Events[4].Seq)
			}
			// Slow holds 20 events in a lapsed batch; fast has read all.
			var slow, fast feed.Batch
			changesOut(t, dir, 0, &slow, "changes", job, "--consumer", "slow", "--limit", "20", "--lease", "50ms")
			changesOut(t, dir, 0, &fast, "changes", job, "--consumer", "fast", "--limit", "1000")
			changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "fast", "--batch", fast.ID)
			time.Sleep(150 * time.Millisecond)
			changesOut(t, dir, 0, nil, "prune", job, "--keep", "0s")
			var again feed.Batch
			changesOut(t, dir, 0, &again, "changes", job, "--consumer", "slow", "--limit", "1000")
			if len(again.Events) != 30 || again.Events[0].Seq != slow.Events[0].Seq || again.ID == slow.ID {
				t.Fatalf("slow after the prune: %d events from %v, want all 30 again from %d", len(again.Events), firstSeq(&again), slow.Events[0].Seq)
			}
			changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "slow", "--batch", again.ID)
			var rest feed.Batch
			changesOut(t, dir, 0, &rest, "changes", job, "--consumer", "mail", "--limit", "1000")
			if len(rest.Events) != 25 || rest.Events[0].Seq != b.Events[5].Seq {
				t.Fatalf("mail after the prune: %d events from %v, want 25 from %d", len(rest.Events), firstSeq(&rest), b.Events[5].Seq)
			}
			// A reset past the last event (a typo: --to 1000 for 100) would
			// pass over the next events recorded, up to that number.
			last := rest.Events[len(rest.Events)-1].Seq
			if r := idemsync(t, dir, nil, "changes", "reset", job, "--consumer", "mail", "--to", fmt.Sprint(last+1000)); r.code != 2 || !strings.Contains(r.stderr, "latest") {
				t.Errorf("reset --to %d with the feed at %d: exit %d, want 2\n%s%s", last+1000, last, r.code, r.stdout, r.stderr)
			}
			if c := status(); c.Batch != rest.ID || c.Acked != rest.After {
				t.Fatalf("after the refused reset: %+v, want mail still at %d with batch %s", c, rest.After, rest.ID)
			}
			changesOut(t, dir, 0, nil, "changes", "reset", job, "--consumer", "mail", "--to", fmt.Sprint(last))
		})
	}
}

func firstSeq(b *feed.Batch) any {
	if len(b.Events) == 0 {
		return "nothing"
	}
	return b.Events[0].Seq
}

// A consumer's name that PostgreSQL's text cannot hold (a NUL byte, bytes
// that are not UTF-8) or too long to index is refused as the bad input it
// is, exit 2 (400 over HTTP), naming --consumer, on SQLite as on
// PostgreSQL; it was a transient error on PostgreSQL (exit 3, 503: retry,
// forever) and taken as is on SQLite, whose status then printed the bytes
// that are not UTF-8 as U+FFFD, one name for two consumers
// (docs/changes.md, "Batches, leases, acknowledgements").
func TestChangesConsumerNames(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 3})
	var long strings.Builder // 10,240 bytes that compress badly
	for i := range 160 {
		fmt.Fprintf(&long, "%x", sha256.Sum256([]byte{byte(i)}))
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			job := changesJob(t, name, dir, url)
			runCode(t, dir, nil, 0, "run", job)
			for _, c := range []string{"mail\xff", long.String()} {
				for _, args := range [][]string{
					{"changes", job, "--consumer", c},
					{"changes", "ack", job, "--consumer", c, "--batch", "x"},
					{"changes", "reset", job, "--consumer", c, "--to", "latest"},
				} {
					if r := idemsync(t, dir, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "--consumer") {
						t.Errorf("%s %s --consumer %.12q…: exit %d, want 2 naming --consumer\n%s", args[0], args[1], c, r.code, r.stderr)
					}
				}
			}
			s := startServe(t, dir, dir, nil)
			for _, body := range []string{`{"consumer":"mail\u0000x"}`, `{"consumer":"` + long.String() + `"}`} {
				if code, out := s.do(t, "POST", "/jobs/job/changes", body); code != 400 || !strings.Contains(out, "consumer") {
					t.Errorf("POST /changes %.30s…: %d %s, want 400 naming the consumer", body, code, out)
				}
			}
			var st feed.Report
			changesOut(t, dir, 0, &st, "changes", "status", job)
			if len(st.Consumers) != 0 {
				t.Errorf("after the refused names: consumers %+v, want none", st.Consumers)
			}
		})
	}
}
