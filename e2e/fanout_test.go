package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Clean runs of a two-resource job (orders → order_items) and a
// three-resource job (customers, orders, order_items) leave every table
// equal to the source; every parent's children route is asked, also for
// parents without children; a second run without changes walks no child.
func TestFanoutCleanRun(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, c := range []struct {
			name string
			spec shopJob
		}{
			{"two", shopJob{parentStyle: "cursor", childStyle: "page"}},
			{"three", shopJob{customers: true, parentStyle: "page", childStyle: "cursor"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if tgt.schema != "" {
					tgt = postgresTarget(t, tgt.url)
				}
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 33, MaxChildren: 13, Seed: 12})
				dir := t.TempDir()
				c.spec.api, c.spec.target, c.spec.schema = url, tgt.url, tgt.schema
				job := writeJob(t, dir, "job.yaml", c.spec.yaml())
				j := runJob(t, dir, 0, "run", job)
				if j.Status != "completed" || j.resource(t, "order_items").Records != int64(len(s.AllChildren())) {
					t.Errorf("first run: %+v", j)
				}
				asked := childRequestCounts(s)
				for _, p := range s.Parents() {
					if asked[p.ID] == 0 {
						t.Errorf("children of parent %d (%d of them) never asked", p.ID, len(s.Children(p.ID)))
					}
				}
				assertShop(t, tgt, dir, s, c.spec.customers)

				s.ResetCounters()
				j = runJob(t, dir, 0, "run", job)
				if got := childRequestCounts(s); len(got) != 0 {
					t.Errorf("a run without changes fetched children of %d parents: %v", len(got), got)
				}
				if r := j.resource(t, "order_items"); r.Status != "completed" || r.Inserted+r.Updated != 0 {
					t.Errorf("order_items on a run without changes: %+v", r.runJSON)
				}
				assertShop(t, tgt, dir, s, c.spec.customers)
			})
		}
	})
}

// parent_rows: changed walks the children of the parents the parent's run
// inserted or updated, and only those: a parent whose child was added,
// updated or touched, a parent changed itself, a new parent.
func TestFanoutChangedWalksOnlyChangedParents(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 10, Seed: 13})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "changed"}.yaml())
		runJob(t, dir, 0, "run", job)

		s.AddChildren(3, 2)
		s.UpdateChild(2, s.Children(2)[0].ID)
		s.TouchParent(8)
		s.UpdateParent(9)
		added := s.AddParents(1, 10)
		want := []int{2, 3, 8, 9, added[0].ID}
		s.ResetCounters()
		j := runJob(t, dir, 0, "run", job)
		got := slices.Sorted(maps.Keys(childRequestCounts(s)))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("children fetched for parents %v, want %v", got, want)
		}
		for _, id := range want {
			if n, min := s.ChildRequests(id), len(s.Children(id))/4+1; n < min || n > min+1 {
				t.Errorf("parent %d: %d child requests, want %d (one walk of its pages)", id, n, min)
			}
		}
		if r := j.resource(t, "orders"); r.Inserted != 1 || r.Updated != 4 {
			t.Errorf("orders: %d inserted, %d updated; want 1, 4", r.Inserted, r.Updated)
		}
		assertShop(t, tgt, dir, s, false)
	})
}

// parent_rows: all walks the children of every parent on every run.
func TestFanoutAllWalksEveryParent(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 25, Seed: 14})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, parentRows: "all"}.yaml())
	runJob(t, dir, 0, "run", job)
	s.AddChildren(5, 1)
	s.ResetCounters()
	j := runJob(t, dir, 0, "run", job)
	if got := childRequestCounts(s); len(got) != 25 {
		t.Errorf("parent_rows: all fetched children of %d parents, want 25", len(got))
	}
	if r := j.resource(t, "order_items"); r.Inserted != 1 || r.Records != int64(len(s.AllChildren())) {
		t.Errorf("order_items: %+v", r.runJSON)
	}
	assertShop(t, tgt, dir, s, false)
}

// A 404 for one parent's children under on_bad_record: fail makes the job
// exit 1 naming the parent, while the parent resource completed; after the
// fix, the next run continues the child walk at that parent.
func TestFanoutChild404Fails(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 6, Seed: 15, NotFound: []int{17}})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, onBad: "fail"}.yaml())
		j := runJob(t, dir, 1, "run", job)
		items := j.resource(t, "order_items")
		if j.Status == "completed" || j.resource(t, "orders").Status != "completed" || items.Status != "failed" {
			t.Errorf("with parent 17's children missing: job %s, orders %s, order_items %s",
				j.Status, j.resource(t, "orders").Status, items.Status)
		}
		if !strings.Contains(items.Error, "17") || !strings.Contains(items.Error, "404") {
			t.Errorf("order_items error does not name parent 17 and the 404: %q", items.Error)
		}
		for _, p := range s.Parents() {
			if p.ID > 17 && s.ChildRequests(p.ID) > 0 {
				t.Errorf("children of parent %d fetched after parent 17 failed", p.ID)
			}
		}

		s.SetNotFound(17, false)
		s.ResetCounters()
		j = runJob(t, dir, 0, "run", job)
		// The failed run is continued and completes; the job's failure
		// closed its cycle, so a new run of order_items follows the new
		// run of orders (and walks no parent: orders changed none).
		if r := j.resource(t, "order_items"); r.RunID < items.RunID || r.Status != "completed" {
			t.Errorf("order_items after the fix: run %d %s, want run %d continued", r.RunID, r.Status, items.RunID)
		}
		for _, r := range statusEntries(t, dir, job, "--runs", "10")["order_items"].Runs {
			if r.RunID == items.RunID && r.Status != "completed" {
				t.Errorf("the failed run %d was not continued to the end: %s", r.RunID, r.Status)
			}
		}
		for id, n := range childRequestCounts(s) {
			if id < 17 {
				t.Errorf("after the fix, children of parent %d fetched again (%d requests)", id, n)
			}
		}
		assertShop(t, tgt, dir, s, false)
	})
}

// Under on_bad_record: skip the parent whose children 404 becomes a dead
// letter of the child resource; every other parent's children are synced.
func TestFanoutChild404Skipped(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 6, Seed: 16, NotFound: []int{2}})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, onBad: "skip"}.yaml())
	j := runJob(t, dir, 0, "run", job)
	if j.Status != "completed" {
		t.Errorf("job %s with a skipped parent", j.Status)
	}
	st := statusEntries(t, dir, job)
	if st["order_items"].DeadLetters < 1 {
		t.Errorf("order_items has %d dead letters, want the 404 of parent 2", st["order_items"].DeadLetters)
	}
	if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
		t.Errorf("orders: %s", d)
	}
	var kept []fakeapi.ShopChild
	for _, c := range s.AllChildren() {
		if c.ParentID != 2 {
			kept = append(kept, c)
		}
	}
	if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(kept)); d != "" {
		t.Errorf("order_items of the other parents: %s", d)
	}
}

// fanout_concurrency: N walks the children of up to N parents at once
// (and 1 of one at a time), and the tables still equal the source.
func TestFanoutConcurrency(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, n := range []int{1, 4} {
			t.Run(strconv.Itoa(n), func(t *testing.T) {
				if tgt.schema != "" {
					tgt = postgresTarget(t, tgt.url)
				}
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 24, MaxChildren: 9, Seed: 17})
				dir := t.TempDir()
				job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, fanout: n}.yaml())
				s.SetLatency(15 * time.Millisecond)
				runJob(t, dir, 0, "run", job)
				if got := s.MaxInFlight(); (n == 1 && got != 1) || (n > 1 && (got < 2 || got > n)) {
					t.Errorf("fanout_concurrency %d: %d requests in flight at most", n, got)
				}
				assertShop(t, tgt, dir, s, false)
			})
		}
	})
}

// githubJob is a repos → issues job over the github shape: bare arrays
// paged by Link header, the issues path templated from two parent
// columns. Without issues it is a v1 job of the repos alone.
func githubJob(api, target string, issues bool) string {
	repos := `pagination: {style: link, size_param: per_page, size: 4}
target:
  table: repos
  key: [id]
  columns: {id: {path: id, type: integer}, owner: {path: owner.login, type: text}, name: {path: name, type: text}, updated_at: {path: updated_at, type: text}}
`
	if !issues {
		return fmt.Sprintf("name: repos\nsource: {url: %q, timeout: 5s}\n%s", api+"/orgs/org1/repos",
			strings.Replace(repos, "target:\n", fmt.Sprintf("target:\n  url: %q\n", target), 1))
	}
	indent := func(s string) string {
		return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
	}
	return fmt.Sprintf(`name: github
defaults:
  source: {base_url: %q, timeout: 5s}
  target: {url: %q}
resources:
  - name: repos
    source: {path: /orgs/org1/repos}
%s  - name: issues
    parent: repos
    fanout_concurrency: 2
    source: {path: "/repos/{parent.owner}/{parent.name}/issues"}
    pagination: {style: link, size_param: per_page, size: 3}
    target:
      table: issues
      key: [repo_id, number]
      columns: {repo_id: {parent: id}, number: {path: number, type: integer}, id: {path: id, type: integer}, title: {path: title, type: text}, comments: {path: comments, type: integer}}
`, api, target, indent(repos))
}

// wantRepos and wantIssues are the github shape's tables for org1.
func wantRepos(s *fakeapi.Shop) (repos, issues shopTable) {
	repos, issues = shopTable{}, shopTable{}
	for _, p := range s.Parents() {
		if p.Owner != "org1" {
			continue
		}
		repos[strconv.Itoa(p.ID)] = p.Owner + "|" + p.Name + "|" + stamp(p.UpdatedAt)
		for _, c := range s.Children(p.ID) {
			issues[fmt.Sprintf("%d|%d", p.ID, c.Number)] = fmt.Sprintf("%d|%s|%d", c.ID, c.SKU, c.Qty)
		}
	}
	return repos, issues
}

// The GitHub shape: an organisation's repositories by Link header, then
// each one's issues at a path built from two parent columns.
func TestFanoutGitHubShape(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Shape: fakeapi.ShapeGitHub, Parents: 30, MaxChildren: 8, Seed: 18})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", githubJob(url, tgt.url, true))
	runJob(t, dir, 0, "run", job)
	repos, issues := wantRepos(s)
	if d := diffTables(tgt.read(t, dir, "repos", 1, "id", "owner", "name", "updated_at"), repos); d != "" {
		t.Errorf("repos: %s", d)
	}
	if d := diffTables(tgt.read(t, dir, "issues", 2, "repo_id", "number", "id", "title", "comments"), issues); d != "" {
		t.Errorf("issues: %s", d)
	}
	for _, p := range s.Parents() {
		if n := s.ChildRequests(p.ID); (p.Owner == "org1") != (n > 0) {
			t.Errorf("repo %s/%s: %d issue requests", p.Owner, p.Name, n)
		}
	}
}

// The repos half of TestFanoutGitHubShape as a v1 job: the github shape
// and its Link pagination, without fan-out.
func TestGitHubShapeV1Repos(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Shape: fakeapi.ShapeGitHub, Parents: 30, Seed: 18})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", githubJob(url, tgt.url, false))
	if r := runCode(t, dir, nil, 0, "run", job); r.Records != 10 {
		t.Errorf("repos run: %+v", r)
	}
	repos, _ := wantRepos(s)
	if d := diffTables(tgt.read(t, dir, "repos", 1, "id", "owner", "name", "updated_at"), repos); d != "" {
		t.Errorf("repos: %s", d)
	}
}
