package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

// DefaultShowLimit is show's default --limit.
const DefaultShowLimit = 20

// showWidth is the widest a value is printed in show's table; --json
// prints values whole.
const showWidth = 40

// showOptions are the parsed command line of show.
type showOptions struct {
	io       *IOStreams
	g        *globalOpts
	file     string
	limit    int
	resource string
}

func newCmdShow(f *Factory, runF func(*showOptions) error) *cobra.Command {
	o := &showOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "show JOB.yaml",
		Short: "Print the latest rows of the job's table",
		Long: `Print the rows the job wrote most recently (by the table's
_idemsync_synced_at column, newest first), so the result of a run can be
seen without a database client. Values are shown as text, NULL as NULL
(null with --json); wide values are cut to 40 characters in the table.
The schema changes the job's pages made follow, newest first, as
status --schema-changes lists them.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if o.limit < 1 {
				return &usageError{err: fmt.Errorf("--limit must be at least 1")}
			}
			if runF != nil {
				return runF(o)
			}
			return runShow(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.IntVar(&o.limit, "limit", DefaultShowLimit, "how many rows to print")
	fl.StringVar(&o.resource, "resource", "", "the resource to show (a single-resource job has one, named after the job)")
	return c
}

// runShow prints the latest rows of the job file's tables.
func runShow(ctx context.Context, o *showOptions) error {
	g, ios := o.g, o.io
	limit, resource := o.limit, o.resource
	jf, err := jobfile.LoadResourcesFile(o.file)
	if err != nil {
		return err
	}
	g.jobName = jf.Name
	rs := jf.Resources
	if resource != "" {
		r := jf.Resource(resource)
		if r == nil {
			return &usageError{err: fmt.Errorf("--resource %q: job %s has no such resource (it has: %s)", resource, jf.Name, strings.Join(jf.Names(), ", "))}
		}
		rs = []jobfile.Resource{*r}
	}
	schema, err := shownSchemaChanges(ctx, g, ios, rs)
	if err != nil {
		return err
	}
	var objs []map[string]any
	for i, r := range rs {
		tables, err := latestRows(ctx, g, ios, r.Job, limit)
		if err != nil {
			return err
		}
		cols, rows := tables[0].cols, tables[0].rows
		obj := showJSON(jf.Name, r.Name, r.Job, cols, rows)
		if len(tables) > 1 {
			obj["children"] = childrenJSON(tables[1:])
		}
		obj["schema_changes"] = schema[i]
		if schema[i] == nil {
			obj["schema_changes"] = []contract.SchemaChange{}
		}
		objs = append(objs, obj)
		if g.json {
			continue
		}
		if len(rs) > 1 {
			if i > 0 {
				fmt.Fprintln(ios.Out)
			}
			fmt.Fprintf(ios.Out, "%s (table %s)\n", r.Name, r.Job.Table.String())
		}
		printRows(ios, cols, rows)
		printChildren(ios, tables[1:])
		if len(schema[i]) > 0 {
			writeSchemaChanges(ios.Out, schema[i])
		}
	}
	switch {
	case !g.json:
	case len(objs) == 1:
		writeJSON(ios, objs[0])
	default:
		writeJSON(ios, map[string]any{"job": jf.Name, "resources": objs})
	}
	return nil
}

// latestRows reads the latest rows of job's table, then of each of its
// child tables (show_children.go).
func latestRows(ctx context.Context, g *globalOpts, ios *IOStreams, job *idsync.Job, limit int) ([]shownTable, error) {
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, job.Secrets, job.Name)
	if err != nil {
		return nil, &usageError{err: err}
	}
	target, err := sink.OpenRead(ctx, job.Target.Conn(), log)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	return readShown(ctx, target, &job.Table, limit)
}

// showJSON is show's --json object for one resource: the job, the
// resource (the job's name for a single-resource job), its table, the
// columns in table order and the rows as objects, newest first.
func showJSON(name, resource string, job *idsync.Job, cols []string, rows [][]*string) map[string]any {
	objs := make([]map[string]*string, 0, len(rows))
	for _, r := range rows {
		o := make(map[string]*string, len(cols))
		for i, c := range cols {
			o[c] = r[i]
		}
		objs = append(objs, o)
	}
	return map[string]any{"job": name, "resource": resource, "table": job.Table.String(), "columns": cols, "rows": objs}
}

// printRows prints rows as an aligned table with a header line.
func printRows(ios *IOStreams, cols []string, rows [][]*string) {
	if len(rows) == 0 {
		fmt.Fprintln(ios.Out, "(no rows)")
		return
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = showCell(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// showCell is one value as show prints it: NULL for nil, control
// characters as spaces, cut to showWidth characters with an ellipsis.
func showCell(v *string) string {
	if v == nil {
		return "NULL"
	}
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, *v)
	if utf8.RuneCountInString(s) > showWidth {
		s = string([]rune(s)[:showWidth-1]) + "…"
	}
	return s
}
