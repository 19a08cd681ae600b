package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	gosync "sync"
	"time"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// command runs source.auth.run (no shell) and sends its trimmed standard
// output as the header value, reused for ttl and fetched again on a 401.
// Its standard error is never logged: it could carry the secret.
type command struct {
	a    *spec.Auth
	red  *idsync.Redactor
	mu   gosync.Mutex
	val  string
	at   time.Time
	last string
}

func newCommand(a *spec.Auth, red *idsync.Redactor) credential {
	return &command{a: a, red: red}
}

func (c *command) apply(req *http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.val == "" || time.Since(c.at) >= c.a.TTL.Duration {
		v, err := c.run(req.Context())
		if err != nil {
			return err
		}
		c.val, c.at = v, time.Now()
	}
	c.last = *c.a.Prefix + c.val
	req.Header.Set(c.a.Header, c.last)
	return nil
}

// outputGrace is how long the output of a command that exited is still
// read while a process it left behind holds its standard output open.
const outputGrace = time.Second

// run runs the command in a process group of its own, bounded by ctx (the
// attempt's source.timeout): at the deadline the whole group is killed, so
// a background process holding standard output open cannot keep the run
// waiting (docs/job-file.md, Auth).
func (c *command) run(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, c.a.Run[0], c.a.Run[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &out
	ownGroup(cmd)
	cmd.WaitDelay = outputGrace
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The command exited; what it left holding the output is ended.
		killGroup(cmd)
		if cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil
		}
	}
	v := strings.TrimSpace(out.String())
	c.red.Add(v)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("auth command %s: %w", c.a.Run[0], ctx.Err())
	case errors.As(err, &ee):
		return "", permanent(fmt.Sprintf("auth command %s failed with exit %d", c.a.Run[0], ee.ExitCode()),
			"run the command by hand to see its error (idemsync does not log its stderr)", nil)
	case err != nil:
		return "", permanent(fmt.Sprintf("auth command %s could not start", c.a.Run[0]), "check source.auth.run", errors.New(c.red.Redact(err.Error())))
	case v == "":
		return "", permanent(fmt.Sprintf("auth command %s printed no token", c.a.Run[0]), "", nil)
	}
	return v, nil
}

func (c *command) invalidate(stale string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *c.a.Prefix+c.val == stale {
		c.val = ""
	}
}

func (c *command) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}
