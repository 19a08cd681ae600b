package sync

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/sync/paging"
)

// A child's parent is numbered the same way everywhere: the log, the
// errors and status say "parent N (id=…)", never "window N" (a fan-out
// walk is a windowed run inside, but its windows are parents).
func TestFanOutNamesParentsAlike(t *testing.T) {
	rig, fs := newFanRig(1, 2, 3, 4)
	serve := itemsAPI(map[string]int{"1": 1, "2": 0, "3": 5, "4": 2})
	eng := rig.fanEngine(childJob(t, "", "", 2), &fakeSource{records: "data", serve: serve}, fs)
	var logs bytes.Buffer
	eng.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for i := 0; i < 3; i++ { // stopped twice mid-walk, then resumed
		if _, err := eng.Run(context.Background(), Options{MaxPages: 3}); err != nil {
			t.Fatal(err)
		}
		logs.WriteString(describeLast(rig) + "\n")
	}
	if strings.Contains(logs.String(), "window ") {
		t.Errorf("the log names a parent as a window:\n%s", logs.String())
	}
	// Parent N is the Nth parent row: id=N here.
	for _, m := range regexp.MustCompile(`parent (\d+) \(id=(\d+)\)`).FindAllStringSubmatch(logs.String(), -1) {
		if m[1] != m[2] {
			t.Errorf("%q: parent %s is id=%s", m[0], m[1], m[2])
		}
	}
}

func describeLast(rig *engineRig) string {
	run := rig.store.lastRun()
	p, err := paging.DecodePosition("", run.Checkpoint)
	if err != nil {
		return ""
	}
	return p.Describe("page", nil)
}

// A child page that contradicts itself (empty while the total says more)
// names its parent as status does, in the log and in the error.
func TestFanOutFailureNamesParent(t *testing.T) {
	rig, fs := newFanRig(1, 2, 3, 4)
	items := itemsAPI(map[string]int{"1": 1, "2": 0, "3": 5, "4": 2})
	serve := func(ctx context.Context, u *url.URL) (string, error) {
		if strings.HasPrefix(u.Path, "/orders/3/") && u.Query().Get("page") != "1" {
			return `{"data":[],"total":5}`, nil // empty, but the total says more: contradicted
		}
		body, err := items(ctx, u)
		return strings.TrimSuffix(body, "}") + `,"total":5}`, err
	}
	job := childJob(t, "", "", 2)
	job.Pagination.Total = "total"
	eng := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs)
	var logs bytes.Buffer
	eng.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := eng.Run(context.Background(), Options{})
	if err == nil {
		t.Fatal("the run did not fail")
	}
	text := logs.String() + err.Error() + "\n" + describeLast(rig)
	if strings.Contains(text, "window ") {
		t.Errorf("a parent named as a window:\n%s", text)
	}
}
