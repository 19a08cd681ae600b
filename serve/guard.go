package serve

import (
	"os"
	gosync "sync"
)

// guard keeps one run per job file in this server: a run requested while
// one is going joins it instead of starting a second (docs/serve.md,
// "Runs"). Across processes the state store's run lock does the same
// (exit 4, 409).
type guard struct {
	mu      gosync.Mutex
	running map[string]*flight // by resolved job file
}

// flight is one run in progress; started closes once the run is
// recorded in the job's state (or has ended), done when reply is set.
type flight struct {
	fi        os.FileInfo // of the job file when the run started; nil if unknown
	started   chan struct{}
	startOnce gosync.Once
	done      chan struct{}
	reply     Reply
}

// markStarted closes started; a second call does nothing.
func (f *flight) markStarted() { f.startOnce.Do(func() { close(f.started) }) }

func newGuard() *guard { return &guard{running: map[string]*flight{}} }

// start returns the run of file in progress and false, or registers a new
// one and returns it and true: the caller runs it and calls finish. A run
// of the same file under another name (a hard link; the name in another
// case on a file system that ignores case) is file's run too.
func (g *guard) start(file string) (*flight, bool) {
	fi, err := os.Stat(file)
	if err != nil {
		fi = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.running[file]; ok {
		return f, false
	}
	for _, f := range g.running {
		if fi != nil && f.fi != nil && os.SameFile(fi, f.fi) {
			return f, false
		}
	}
	f := &flight{fi: fi, started: make(chan struct{}), done: make(chan struct{})}
	g.running[file] = f
	return f, true
}

// finish records the run's reply and frees its job for the next run.
func (g *guard) finish(file string, f *flight, r Reply) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f.reply = r
	delete(g.running, file)
	f.markStarted()
	close(f.done)
}

// files returns the job files with a run in progress.
func (g *guard) files() map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]bool, len(g.running))
	for f := range g.running {
		out[f] = true
	}
	return out
}
