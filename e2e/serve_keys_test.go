package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"
)

// keyOver is one ledger call over the server: its HTTP status and object.
func (s *serveProc) keyOver(t *testing.T, action, body string) (int, keyJSON) {
	t.Helper()
	method, path := "POST", "/keys/"+action
	if action == "get" {
		method, path, body = "GET", "/keys/get?"+body, ""
	}
	code, raw := s.do(t, method, path, body)
	var k keyJSON
	if err := json.Unmarshal([]byte(raw), &k); err != nil {
		t.Fatalf("%s %s: not one JSON object: %v: %s", method, path, err, raw)
	}
	return code, k
}

// The ledger over HTTP is `idemsync key` (SQLite and PostgreSQL state):
// twenty concurrent claims of one key, one acquired; the holder's token
// completes it, a stale token is refused, a replay returns the stored
// result, the CLI reads what the server wrote; fail, heartbeat and get;
// a store that cannot be reached answers 503 with exit 3 and no token.
func TestServeLedger(t *testing.T) {
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			s := startServe(t, dir, jobs, []string{"IDEMSYNC_STATE=" + state})
			s.keyOver(t, "get", "key=warm") // migrate once
			const n = 20
			out := make([]keyJSON, n)
			codes := make([]int, n)
			var wg gosync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], out[i] = s.keyOver(t, "claim", fmt.Sprintf(`{"key":"inv-1","ns":"mail","owner":"exec-%d","params":{"to":"a@b.c"}}`, i))
				}()
			}
			wg.Wait()
			var holder keyJSON
			for i := range n {
				switch {
				case codes[i] != 200:
					t.Fatalf("claim %d: HTTP %d %+v", i, codes[i], out[i])
				case out[i].Status == "acquired":
					if holder.Token != "" {
						t.Fatalf("two claims acquired inv-1: %+v and %+v", holder, out[i])
					}
					holder = out[i]
				case out[i].Status != "in_progress":
					t.Fatalf("claim %d: %+v", i, out[i])
				}
			}
			if holder.Token == "" || holder.DownstreamKey == "" {
				t.Fatalf("no claim acquired inv-1: %+v", out)
			}
			if code, k := s.keyOver(t, "complete", `{"key":"inv-1","ns":"mail","token":"not-the-token","result":{"id":1}}`); code != 200 || k.Status != "stale_token" {
				t.Errorf("complete with a stale token: %d %+v", code, k)
			}
			if code, k := s.keyOver(t, "heartbeat", `{"key":"inv-1","ns":"mail","token":"`+holder.Token+`"}`); code != 200 || k.Status != "ok" {
				t.Errorf("heartbeat: %d %+v", code, k)
			}
			if code, k := s.keyOver(t, "complete", `{"key":"inv-1","ns":"mail","token":"`+holder.Token+`","result":{"message_id":"m-7"}}`); code != 200 || k.Status != "completed" {
				t.Errorf("complete: %d %+v", code, k)
			}
			code, replay := s.keyOver(t, "claim", `{"key":"inv-1","ns":"mail","params":{"to":"a@b.c"}}`)
			if code != 200 || replay.Status != "completed" || string(replay.Result) != `{"message_id":"m-7"}` || replay.Token != "" {
				t.Errorf("a replayed claim: %d %+v", code, replay)
			}
			if code, k := s.keyOver(t, "claim", `{"key":"inv-1","ns":"mail","params":{"to":"x@y.z"}}`); code != 200 || k.Status != "mismatch" {
				t.Errorf("a claim with other params: %d %+v", code, k)
			}
			if k, _ := key(t, dir, state, "get", "inv-1", "--ns", "mail"); k.Status != "completed" || string(k.Result) != `{"message_id":"m-7"}` {
				t.Errorf("the CLI reads %+v", k)
			}
			if code, k := s.keyOver(t, "get", "key=inv-1&ns=mail"); code != 200 || k.Status != "completed" {
				t.Errorf("get: %d %+v", code, k)
			}

			_, c := s.keyOver(t, "claim", `{"key":"inv-2","ns":"mail"}`)
			if code, k := s.keyOver(t, "fail", `{"key":"inv-2","ns":"mail","token":"`+c.Token+`","permanent":true,"error":{"smtp":550}}`); code != 200 || k.Status != "failed" {
				t.Errorf("fail: %d %+v", code, k)
			}
			if code, k := s.keyOver(t, "claim", `{"key":"inv-2","ns":"mail"}`); code != 200 || k.Status != "failed" || string(k.Error) != `{"smtp":550}` {
				t.Errorf("a claim after a permanent failure: %d %+v", code, k)
			}
			if code, k := s.keyOver(t, "claim", `{"key":"","ns":"mail"}`); code != 400 || k.ExitCode != 2 || k.Token != "" {
				t.Errorf("an empty key: %d %+v", code, k)
			}
			if code, k := s.keyOver(t, "get", "key="+url.QueryEscape("ключ/🔑 with space")); code != 200 || k.Status != "not_found" || k.Key != "ключ/🔑 with space" {
				t.Errorf("get of a UTF-8 key: %d %+v", code, k)
			}
		})
	}
	t.Run("store down", func(t *testing.T) {
		s := startServe(t, dir, jobs, []string{"IDEMSYNC_STATE=postgres://nobody:pw@127.0.0.1:1/none?connect_timeout=2"})
		start := time.Now()
		code, k := s.keyOver(t, "claim", `{"key":"x"}`)
		if code != 503 || k.Status != "error" || k.ExitCode != 3 || k.Token != "" {
			t.Errorf("unreachable store: %d %+v after %s", code, k, time.Since(start))
		}
	})
}

// SIGTERM stops the server promptly even while a claim waits (up to 5m)
// for a key another holder has: the waiting claim is interrupted as
// SIGTERM interrupts `idemsync key claim --wait` (answered, nothing
// claimed), and the server exits 0 at once, not after its 60 s grace
// with a shutdown error (docs/serve.md, "Runs").
func TestServeShutdownDuringClaimWait(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, jobs, nil)
	if code, k := s.keyOver(t, "claim", `{"key":"held","owner":"first","ttl":"10m"}`); code != 200 || k.Status != "acquired" {
		t.Fatalf("the first claim: %d %+v", code, k)
	}
	waiting := make(chan serveRun, 1)
	go func() {
		code, body := s.do(t, "POST", "/keys/claim", `{"key":"held","owner":"second","wait":"5m"}`)
		waiting <- serveRun{code, body}
	}()
	time.Sleep(time.Second) // the claim is waiting
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want exit 0", err)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("serve took %s to stop", took.Round(time.Second))
		}
	case <-time.After(90 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	got := <-waiting
	if got.code != 503 || !strings.Contains(got.body, `"status":"error"`) || !strings.Contains(got.body, `"exit_code":130`) {
		t.Errorf("the claim waiting at SIGTERM: %d %q, want 503, status error, exit code 130", got.code, got.body)
	}
	// The command line's claim --wait, sent SIGTERM, exits the same 130.
	c, errOut, done := startIdemsync(t, dir, nil, "key", "claim", "held", "--owner", "cli", "--wait", "5m")
	time.Sleep(time.Second)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if code := c.ProcessState.ExitCode(); code != 130 {
			t.Errorf("idemsync key claim --wait 5m at SIGTERM: exit %d, want 130: %s", code, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("idemsync key claim --wait did not stop after SIGTERM")
	}
	out := idemsync(t, dir, nil, "key", "get", "held")
	if !strings.Contains(out.stdout, `"owner":"first"`) {
		t.Errorf("the key after SIGTERM: %s, want still the first owner's", out.stdout)
	}
}
