package e2e

import (
	"encoding/json"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A run key names one start of one selection of a job file's resources:
// two schedules of one file, each with its own --resource and the same
// key (a CronJob's scheduled timestamp is the same for two CronJobs on
// one schedule), both run. Before, the second reported the first's
// result (another resource's) with exit 0 and synced nothing.
func TestResourcesRunKeyPerSelection(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 6, Seed: 31})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, customers: true, noItems: true}.yaml())
	const key = "2026-11-26T10:00:00Z"

	if j := runJob(t, dir, 0, "run", job, "--resource", "orders", "--run-key", key); len(j.Resources) != 1 || j.Resources[0].Resource != "orders" {
		t.Fatalf("--resource orders --run-key: %+v", j)
	}
	r := idemsync(t, dir, nil, "run", job, "--resource", "customers", "--run-key", key, "--json")
	var extra struct {
		Repeated bool `json:"repeated"`
	}
	_ = json.Unmarshal([]byte(r.stdout), &extra)
	j := parseJobRun(t, r)
	if r.code != 0 || extra.Repeated || len(j.Resources) != 1 || j.Resources[0].Resource != "customers" || j.Resources[0].Status != "completed" {
		t.Fatalf("--resource customers with the key --resource orders ran: exit %d, repeated %v, %+v", r.code, extra.Repeated, j.Resources)
	}
	if d := diffTables(tgt.read(t, dir, "customers", 1, customersCols...), wantCustomers(s.Customers())); d != "" {
		t.Errorf("customers: %s", d)
	}

	// The same selection with the key again is the same start: repeated,
	// nothing fetched; its order on the command line does not matter.
	s.ResetCounters()
	r = idemsync(t, dir, nil, "run", job, "--resource", "customers", "--run-key", key, "--json")
	extra.Repeated = false
	_ = json.Unmarshal([]byte(r.stdout), &extra)
	if r.code != 0 || !extra.Repeated || s.TotalRequests() != 0 {
		t.Errorf("--resource customers with its key again: exit %d, repeated %v, %d requests: %s", r.code, extra.Repeated, s.TotalRequests(), r.stdout)
	}
	if j := runJob(t, dir, 0, "run", job, "--run-key", key); len(j.Resources) != 2 || s.TotalRequests() == 0 {
		t.Errorf("the whole file with the key of two --resource starts: %d requests, %+v", s.TotalRequests(), j)
	}
	s.ResetCounters()
	r = idemsync(t, dir, nil, "run", job, "--resource", "customers", "--resource", "orders", "--run-key", key, "--json")
	extra.Repeated = false
	_ = json.Unmarshal([]byte(r.stdout), &extra)
	if r.code != 0 || !extra.Repeated || s.TotalRequests() != 0 {
		t.Errorf("every resource named with the whole file's key: exit %d, repeated %v, %d requests: %s", r.code, extra.Repeated, s.TotalRequests(), r.stdout)
	}
}
