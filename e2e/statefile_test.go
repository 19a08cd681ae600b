package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Many jobs sharing one new state file start at the same instant (cron at
// the top of the hour): none holds another's lock, so every one of them
// must open the file and run. Repeated, since the race is in the opening.
func TestConcurrentFirstOpenOfStateFile(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 50})
	const jobs, rounds = 8, 5
	failures := 0
	for round := range rounds {
		dir := t.TempDir()
		state := filepath.Join(dir, "shared.db")
		var wg gosync.WaitGroup
		results := make([]result, jobs)
		for i := range jobs {
			spec := strings.Replace(styleJob("page", url, fmt.Sprintf("sqlite:out%d.db", i)), "name: orders-page", fmt.Sprintf("name: job%d", i), 1)
			job := writeJob(t, dir, fmt.Sprintf("job%d.yaml", i), spec)
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = idemsync(t, dir, nil, "run", job, "--state", state, "--quiet")
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.code != 0 {
				failures++
				t.Errorf("round %d, job %d: exit %d: %s", round, i, r.code, r.stderr)
			}
		}
	}
	t.Logf("%d of %d concurrent first opens failed", failures, jobs*rounds)
}
