package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/checkpoint/statedump"
	"github.com/idemsync/idemsync/contract"
)

// stateOptions are the parsed command line of state export, import and
// migrate (docs/operations.md, "Moving a job between hosts").
type stateOptions struct {
	io       *IOStreams
	g        *globalOpts
	tokens   bool   // --tokens: the refresh tokens move too
	file     string // import: the dump; export: --out
	from, to string // migrate
}

// newCmdState is state: export, import and migrate a whole state.
func newCmdState(f *Factory) *cobra.Command {
	o := &stateOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "state",
		Short: "Move a state: export it as JSON, import it, or migrate it to another store",
	}
	export := &cobra.Command{
		Use:   "export [--out FILE] [--tokens]",
		Short: "Print the whole state (--state, $IDEMSYNC_STATE or .idemsync/state.db) as JSON",
		Args:  exactArgs(0),
		RunE:  func(c *cobra.Command, _ []string) error { return stateExport(c.Context(), o) },
	}
	export.Flags().StringVar(&o.file, "out", "", "write the JSON to this file (mode 0600) instead of stdout")
	imp := &cobra.Command{
		Use:   "import FILE [--tokens]",
		Short: "Load a state exported as JSON into an empty state",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return stateImport(c.Context(), o)
		},
	}
	migrate := &cobra.Command{
		Use:   "migrate --from STATE --to STATE [--tokens]",
		Short: "Copy a state to another store under both locks, verify it, and mark the old state file as moved",
		Long: `Copy the whole state at --from (a state file, or a postgres:// URL) into the
empty state at --to, holding the run lock of every job of both, then export
the new state and compare it with the old one. A state file left behind is
marked as moved: a run pointed at it exits 2 naming where the state went.
Refresh tokens move only with --tokens.`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			if o.from == "" || o.to == "" {
				return &usageError{err: errors.New("state migrate needs --from and --to")}
			}
			return stateMigrate(c.Context(), o)
		},
	}
	migrate.Flags().StringVar(&o.from, "from", "", "the state to move (a state file or postgres:// URL)")
	migrate.Flags().StringVar(&o.to, "to", "", "the empty state to move it to")
	for _, sc := range []*cobra.Command{export, imp, migrate} {
		sc.Flags().BoolVar(&o.tokens, "tokens", false, "move the stored OAuth2 refresh tokens too (they are secrets)")
		c.AddCommand(sc)
	}
	return c
}

// porter opens the state at path as a store that exports and imports.
func porter(ctx context.Context, path string) (contract.Store, statedump.Porter, error) {
	s, err := openStore(ctx, path, nil)
	if err != nil {
		return nil, nil, err
	}
	p, ok := s.(statedump.Porter)
	if !ok {
		s.Close()
		return nil, nil, fmt.Errorf("state %s cannot be exported", stateName(path))
	}
	return s, p, nil
}

func stateExport(ctx context.Context, o *stateOptions) error {
	path := o.g.statePath(nil)
	if stateMissing(path) {
		return contract.Errorf(contract.Invalid, "state %s does not exist", path)
	}
	if o.file != "" && !strings.Contains(path, "://") {
		if over := stateFileOf(o.file, path); over != "" {
			return &contract.Error{Class: contract.Invalid,
				Msg:  fmt.Sprintf("state export: --out %s is the state file %s", o.file, over),
				Hint: "write the dump to another file"}
		}
	}
	s, p, err := porter(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := p.Export(ctx, o.tokens)
	if err != nil {
		return err
	}
	out := o.io.Out
	if o.file != "" {
		f, err := os.OpenFile(o.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return contract.Errorf(contract.Permanent, "export to %s: %w", o.file, err)
		}
		defer f.Close()
		out = f
	}
	return writeDump(out, d)
}

func writeDump(w io.Writer, d *statedump.Dump) error {
	ios := &IOStreams{Out: w}
	writeJSON(ios, d)
	return nil
}

func stateImport(ctx context.Context, o *stateOptions) error {
	f, err := os.Open(o.file)
	if err != nil {
		return &usageError{err: fmt.Errorf("import: %w", err)}
	}
	defer f.Close()
	d, err := statedump.Read(f)
	if err != nil {
		return contract.Errorf(contract.Invalid, "import %s: %w", o.file, err)
	}
	if !o.tokens {
		delete(d.Tables, "auth_credentials")
		d.Tokens = false
	}
	path := o.g.statePath(nil)
	s, p, err := porter(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := p.Import(ctx, d); err != nil {
		return err
	}
	return o.report(d, "imported "+o.file+" into "+stateName(path))
}

// report prints what moved: the counts of jobs, runs and pages.
func (o *stateOptions) report(d *statedump.Dump, what string) error {
	counts := map[string]int{}
	for _, t := range statedump.Tables {
		counts[t.Name] = len(d.Tables[t.Name])
	}
	if o.g.json {
		o.g.writeResult(o.io, map[string]any{"done": what, "rows": counts, "tokens": d.Tokens})
		return nil
	}
	if !o.g.quiet {
		fmt.Fprintf(o.io.Out, "%s: %d jobs, %d runs, %d pages, %d dead letters (refresh tokens: %v)\n", what,
			counts["jobs"], counts["runs"], counts["pages"], counts["dead_letters"], d.Tokens)
	}
	return nil
}

// lockAll takes the run lock of every job of s and of the job files they
// belong to, and returns the release of them all.
func lockAll(ctx context.Context, s contract.Store, names []string) (func(), error) {
	var unlocks []func()
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	for _, n := range names {
		u, err := s.Lock(ctx, n)
		if err != nil {
			release()
			return nil, err
		}
		unlocks = append(unlocks, u)
	}
	return release, nil
}

// lockNames are the lock names of jobs: each job and each job file.
func lockNames(jobs []string) []string {
	set := map[string]bool{}
	for _, j := range jobs {
		set[j] = true
		if file, _, ok := strings.Cut(j, "."); ok {
			set[file] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// marker is a state that records where it moved (the state file).
type marker interface {
	MarkMoved(ctx context.Context, to string) error
}

func stateMigrate(ctx context.Context, o *stateOptions) error {
	if stateMissing(o.from) {
		return contract.Errorf(contract.Invalid, "state %s does not exist", o.from)
	}
	if realPath(o.from) == realPath(o.to) {
		return &usageError{err: errors.New("state migrate: --from and --to name the same state")}
	}
	from, fp, err := porter(ctx, o.from)
	if err != nil {
		return err
	}
	defer from.Close()
	to, tp, err := porter(ctx, o.to)
	if err != nil {
		return err
	}
	defer to.Close()
	jobs, err := from.JobNames(ctx)
	if err != nil {
		return err
	}
	names := lockNames(jobs)
	unlockFrom, err := lockAll(ctx, from, names)
	if err != nil {
		return err
	}
	defer unlockFrom()
	unlockTo, err := lockAll(ctx, to, names)
	if err != nil {
		return err
	}
	defer unlockTo()
	d, err := fp.Export(ctx, o.tokens)
	if err != nil {
		return err
	}
	if err := tp.Import(ctx, d); err != nil {
		return err
	}
	back, err := tp.Export(ctx, o.tokens)
	if err != nil {
		return err
	}
	if same, which := statedump.Equal(d, back); !same {
		return contract.Errorf(contract.Permanent, "state migrate: the copy at %s differs from %s in %s; the old state was not marked as moved",
			stateName(o.to), stateName(o.from), which)
	}
	if m, ok := from.(marker); ok {
		if err := m.MarkMoved(ctx, stateName(o.to)); err != nil {
			return err
		}
	}
	return o.report(d, "moved "+stateName(o.from)+" to "+stateName(o.to)+", verified")
}

// stateFileOf returns which file of the SQLite state at path (the state
// file, or its -wal, -shm or -journal file) out is, by its path or, when
// both exist, by the file they reach (a link); "" when none. Opening out
// truncated would wipe the state (docs/operations.md, "Moving a job
// between hosts").
func stateFileOf(out, path string) string {
	for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		a, errA := os.Stat(out)
		b, errB := os.Stat(f)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return f
		}
		absA, errA := filepath.Abs(out)
		absB, errB := filepath.Abs(f)
		if errA == nil && errB == nil && absA == absB {
			return f
		}
	}
	return ""
}
