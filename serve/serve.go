// Package serve is idemsync's HTTP face (docs/serve.md): the routes, the
// bearer token, the limits and timeouts, the jobs folder, one run per job
// at a time, and graceful shutdown. What a route does with a job file is
// the command line's own code, handed in by cmd as a Backend: the server
// never runs, reads or prints anything the CLI does not.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	gosync "sync"
	"time"
)

// Reply is what the CLI printed and how it exited: one JSON object (what
// --json prints on stdout) and the exit code (docs/operations.md, "Exit
// codes"), which gives the HTTP status (statusOf).
type Reply struct {
	Body []byte
	Code int
}

// RunOptions are the options a run request may carry in its JSON body:
// the flags of `idemsync run` of the same names.
type RunOptions struct {
	Full      bool     `json:"full"`
	Restart   bool     `json:"restart"`
	Verify    bool     `json:"verify"`
	MaxPages  int      `json:"max_pages"`
	TimeLimit string   `json:"time_limit"` // a Go duration, e.g. "14m"
	Resources []string `json:"resources"`
}

// Backend is the command line's code for one job file: cmd implements it
// with the functions behind `idemsync run --json` and `status --json`.
type Backend interface {
	// Run runs the job file as `idemsync run FILE --json` would; ctx is
	// cancelled as a first SIGTERM cancels the CLI's. It calls started
	// once the run is recorded in the job's state, so that Status shows it
	// as the job's last run (it may not call it: a run that never started).
	Run(ctx context.Context, file string, o RunOptions, started func()) Reply
	// Status is `idemsync status FILE --json [--runs N]`.
	Status(ctx context.Context, file string, runs int) Reply
	// Key is `idemsync key ACTION` (claim, complete, fail, heartbeat,
	// get) with the request's fields as its flags, on the ledger of the
	// state store the CLI would open.
	Key(ctx context.Context, action string, k KeyRequest) Reply
	// Changes is `idemsync changes FILE` (action next), `changes ack FILE`
	// or `changes status FILE` with the request's fields as their flags.
	Changes(ctx context.Context, file, action string, c ChangesRequest) Reply
	// Metrics appends the Prometheus text exposition of the jobs' metrics
	// (docs/operations.md, Metrics) to b; running names the job files with
	// a run in progress in this server.
	Metrics(ctx context.Context, files []string, running map[string]bool) ([]byte, error)
}

// Limits of every request and connection (docs/serve.md, "Security").
const (
	maxBodyBytes      = 1 << 20 // a request body
	maxHeaderBytes    = 32 << 10
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second // lifted for a run, which takes as long as it takes
	idleTimeout       = 120 * time.Second
	// ShutdownGrace is how long a shutdown waits for the runs it
	// interrupted to save their checkpoint and answer.
	ShutdownGrace = 60 * time.Second
	// startWait is how long a run request that finds the job's run going
	// waits for that run to be recorded before answering with the job's
	// status (docs/serve.md, "Runs").
	startWait = 10 * time.Second
)

// Config is a server's configuration.
type Config struct {
	Listen  string // host:port
	Jobs    string // the folder of job files
	Token   string // the bearer token; "" only on a loopback address (CheckListen)
	Backend Backend
	Log     *slog.Logger
	// Ready, when set, is called with the address listened on once the
	// server accepts connections.
	Ready func(addr string)
}

// Server is one `idemsync serve`.
type Server struct {
	cfg   Config
	jobs  *folder
	runs  *guard
	token *token
	mux   http.Handler
	// runCtx is the context of every run: cancelled when the server
	// shuts down, as a first SIGTERM cancels a CLI run.
	runCtx context.Context
	cancel context.CancelFunc
	mu     gosync.Mutex // closing and the Add of wg
	// closing is set when the shutdown starts: no run starts after it.
	closing bool
	wg      gosync.WaitGroup // the runs in progress
}

// New checks cfg and builds its server: an invalid address, a missing
// token off loopback, or a jobs folder that is not one is an error of
// class Invalid to the caller (exit 2).
func New(cfg Config) (*Server, error) {
	if err := CheckListen(cfg.Listen, cfg.Token); err != nil {
		return nil, err
	}
	jobs, err := openFolder(cfg.Jobs)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, jobs: jobs, runs: newGuard(), token: newToken(cfg.Token)}
	s.runCtx, s.cancel = context.WithCancel(context.Background())
	s.mux = s.routes()
	if s.token == nil {
		s.mux = loopbackOnly(s.mux)
	}
	return s, nil
}

// Handler is the server's handler: every route behind the token check.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve listens and serves until ctx is cancelled (SIGTERM or SIGINT in
// the CLI), then shuts down: runs in progress are interrupted as a first
// SIGTERM interrupts a CLI run (checkpoint saved, status interrupted),
// their requests answered, and Serve returns nil once they ended.
func (s *Server) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", s.cfg.Listen, err)
	}
	// Without a token, what counts is the address bound, not the one
	// asked for: "localhost" is a name that a hosts file or a resolver's
	// search domain can map to an address other machines reach.
	if a, ok := ln.Addr().(*net.TCPAddr); s.token == nil && (!ok || !a.IP.IsLoopback()) {
		ln.Close()
		return &ConfigError{Msg: fmt.Sprintf("--listen %s resolved to %s, not a loopback address: set $%s to a bearer token, or listen on 127.0.0.1", s.cfg.Listen, ln.Addr(), TokenEnv)}
	}
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn),
	}
	s.cfg.Log.Info("serving", "addr", ln.Addr().String(), "jobs", s.jobs.root, "token", s.token != nil)
	if s.cfg.Ready != nil {
		s.cfg.Ready(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		s.stopRuns()
		return err
	case <-ctx.Done():
	}
	s.cfg.Log.Info("shutting down: interrupting the runs in progress")
	s.stopRuns()
	grace, stop := context.WithTimeout(context.Background(), ShutdownGrace)
	defer stop()
	err = srv.Shutdown(grace) // their requests were answered by now
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// stopRuns refuses new runs, interrupts those in progress and waits until
// each has saved its checkpoint and ended.
func (s *Server) stopRuns() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// begin counts a run in; false once the shutdown started.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

// ConfigError is a configuration Serve refuses once it has listened (a
// --listen whose bound address is not loopback, without a token): the
// command's usage error, exit 2.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }
