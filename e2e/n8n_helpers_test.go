package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// n8nRig is a real n8n, run with its CLI: IDEMSYNC_TEST_N8N is the path
// of n8n's bin/n8n, IDEMSYNC_TEST_NODE a Node.js 24 (default: node on
// PATH), and n8n keeps its own data in a fresh schema of
// IDEMSYNC_TEST_POSTGRES_URL's database. Each n8n command takes a minute
// or two.
type n8nRig struct {
	t         *testing.T
	node, n8n string
	dir       string
	env       []string
}

// startN8n returns an n8n working in dir with env added to its
// environment (the workflows read it with $env, the Execute Command
// node's shell as its own), the built idemsync first on PATH. It skips
// the test where n8n is not installed.
func startN8n(t *testing.T, dir string, env ...string) *n8nRig {
	t.Helper()
	n8n := os.Getenv("IDEMSYNC_TEST_N8N")
	if n8n == "" {
		t.Skip("IDEMSYNC_TEST_N8N (the path of n8n's bin/n8n) is not set; n8n 2.x with Node.js 24 runs this test")
	}
	node := os.Getenv("IDEMSYNC_TEST_NODE")
	if node == "" {
		node = "node"
	}
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	return &n8nRig{t: t, node: node, n8n: n8n, dir: dir, env: append(append(cleanEnv(),
		"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"N8N_USER_FOLDER="+filepath.Join(dir, "n8n"),
		"DB_TYPE=postgresdb", "DB_POSTGRESDB_HOST="+u.Hostname(), "DB_POSTGRESDB_PORT="+u.Port(),
		"DB_POSTGRESDB_DATABASE="+strings.TrimPrefix(u.Path, "/"), "DB_POSTGRESDB_USER="+u.User.Username(),
		"DB_POSTGRESDB_PASSWORD="+pw, "DB_POSTGRESDB_SCHEMA="+schema,
		`NODES_EXCLUDE=[]`, "N8N_BLOCK_ENV_ACCESS_IN_NODE=false", "N8N_DIAGNOSTICS_ENABLED=false",
		"N8N_RUNNERS_BROKER_PORT="+freePort(t),
		// The Code nodes run in n8n's task runner, whose start may take
		// longer than its 30 s grant on a loaded machine.
		"N8N_RUNNERS_GRANT_TOKEN_TTL=600", "N8N_RUNNERS_TASK_REQUEST_TIMEOUT=600"), env...)}
}

// cmd runs one n8n command and returns its output.
func (r *n8nRig) cmd(args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, r.node, append([]string{r.n8n}, args...)...)
	c.Env, c.Dir = r.env, r.dir
	out, err := c.CombinedOutput()
	if err != nil {
		r.t.Fatalf("n8n %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// execute runs the workflow id once, fails the test unless the execution
// succeeded, and returns how many items each output of each node got.
func (r *n8nRig) execute(id string) map[string][]int {
	r.t.Helper()
	out := r.cmd("execute", "--id="+id, "--rawOutput")
	i := strings.Index(out, "\n{")
	if i < 0 {
		r.t.Fatalf("n8n execute printed no execution:\n%s", out)
	}
	var ex struct {
		Status string
		Data   struct {
			ResultData struct {
				Error   json.RawMessage
				RunData map[string][]struct {
					Data struct {
						Main [][]json.RawMessage
					}
				}
			}
		}
	}
	if err := json.NewDecoder(strings.NewReader(out[i+1:])).Decode(&ex); err != nil {
		r.t.Fatalf("n8n execute output: %v\n%s", err, out)
	}
	if ex.Status != "success" {
		r.t.Fatalf("execution %s: %s", ex.Status, ex.Data.ResultData.Error)
	}
	got := map[string][]int{}
	for name, runs := range ex.Data.ResultData.RunData {
		for _, run := range runs {
			for _, o := range run.Data.Main {
				got[name] = append(got[name], len(o))
			}
		}
	}
	return got
}

// freePort is a TCP port on 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
