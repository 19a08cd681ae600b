package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/initgen"
	"github.com/idemsync/idemsync/jobfile"
)

type initOpts struct {
	out     string
	name    string
	force   bool
	openapi string // init --openapi DESCRIPTION: cmd/init_openapi.go
	path    string
	all     bool
}

func newInitCmd(g *globalOpts, ios *IOStreams) *cobra.Command {
	o := &initOpts{}
	c := &cobra.Command{
		Use:   "init URL | init --openapi DESCRIPTION [--path P | --all]",
		Short: "Write a commented job file from one page of an API, or from its OpenAPI description",
		Long: `Fetch one page of URL and write a job file for it: the records (the largest
array of objects in the body), the pagination style (a Link header, a next
URL or cursor in the body or a header, page numbers, offsets, has_more, a
since parameter), a key (an id-like field), a column per field, and a
SQLite target beside the file. Lines marked "check" are guesses to read
before the first run. The file validates as written.

The URL's own query parameters are kept, except the ones the chosen
pagination sets itself (page, offset, cursor, size). With --out - the file
is printed on stdout.

With --openapi DESCRIPTION (a file or URL, YAML or JSON, OpenAPI 3.x) it writes
one resource per list operation instead: records path, key, pagination
and columns from the description, auth from its security schemes as
${VAR}s, children fanned out from their parent's path. --path P writes the
operation at P (with its parents), --all every one. What it cannot decide
it lists under decide:, which validate and run refuse until made.`,
		Args: func(c *cobra.Command, args []string) error {
			if o.openapi != "" {
				return exactArgs(0)(c, args)
			}
			return exactArgs(1)(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if o.openapi != "" {
				return runInitOpenAPI(c.Context(), g, ios, o)
			}
			return runInit(c.Context(), g, ios, args[0], o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.out, "out", "o", "", "job file to write (default: NAME.yaml in the current folder; - for stdout)")
	f.StringVar(&o.name, "name", "", "job name (default: from the URL's last path segment)")
	f.BoolVar(&o.force, "force", false, "overwrite --out when it exists")
	f.StringVar(&o.openapi, "openapi", "", "write the job file from this OpenAPI 3.x description (file or URL) instead of a fetched page")
	f.StringVar(&o.path, "path", "", "with --openapi: the list operation at this path (and its parents)")
	f.BoolVar(&o.all, "all", false, "with --openapi: every list operation")
	return c
}

func runInit(ctx context.Context, g *globalOpts, ios *IOStreams, rawURL string, o *initOpts) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &usageError{err: fmt.Errorf("init: %q is not an http:// or https:// URL", initgen.ShownURL(rawURL))}
	}
	name := o.name
	if name == "" {
		name = initgen.NameFromURL(u)
	}
	if !initgen.ValidJobName(name) {
		return &usageError{err: fmt.Errorf("init: --name %q may only contain letters, digits, _ and -", name)}
	}
	out := o.out
	if out == "" {
		out = name + ".yaml"
	}
	if out != "-" && !o.force {
		if _, err := os.Stat(out); err == nil {
			return &usageError{err: fmt.Errorf("init: %s exists; choose another --out or add --force", out)}
		}
	}
	page, err := initgen.Fetch(ctx, u)
	if err != nil {
		return err
	}
	spec, sum, err := initgen.Build(page, name)
	if err != nil {
		return err
	}
	if done, err := writeJobFile(ios, g, out, spec, sum); done || err != nil {
		return err
	}
	if vars, _ := sum["variables"].([]string); len(vars) > 0 {
		// The URL's password and credential parameters are written as
		// ${VAR}s, never in clear text (docs/job-file.md, "Starting from
		// idemsync init").
		fmt.Fprintf(ios.Out, "the URL's password and keys are written as ${VAR}s: set %s before validate and run\n", strings.Join(vars, ", "))
	}
	if decide := sum["decide"].([]string); len(decide) > 0 {
		fmt.Fprintf(ios.Out, "wrote %s: %d decision(s) left open, which validate and run refuse until made:\n", out, len(decide))
		for _, d := range decide {
			fmt.Fprintf(ios.Out, "  %s\n", d)
		}
		fmt.Fprintf(ios.Out, "next: make them in the file (lines marked \"decide\"), delete the decide: list, then\n  idemsync validate %s\n", out)
		return nil
	}
	if !g.quiet {
		fmt.Fprintf(ios.Out, "wrote %s: %s pagination, %v records on the first page, key %s, %v columns\n",
			out, sum["style"], sum["records"], sum["key"], sum["columns"])
		fmt.Fprintf(ios.Out, "next: read the lines marked \"check\", then\n  idemsync validate %s\n  idemsync run %s\n  idemsync show %s\n", out, out, out)
	}
	return nil
}

// writeJobFile checks the job file init built (checkWritten) and writes it
// to out ("-": stdout), creating a fresh folder as run creates the state
// file's (docs/job-file.md, "Starting from idemsync init"). done is true
// when nothing is left to print: the file went to stdout, or --json
// printed sum.
func writeJobFile(ios *IOStreams, g *globalOpts, out, spec string, sum map[string]any) (done bool, err error) {
	abs := ""
	if out != "-" {
		if abs, err = filepath.Abs(out); err != nil {
			return true, err
		}
	}
	if err := checkWritten(spec, abs, sum["decide"].([]string)); err != nil {
		return true, err
	}
	if out == "-" {
		fmt.Fprint(ios.Out, spec)
		return true, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return true, contract.Errorf(contract.Permanent, "init: create the folder of %s: %w", out, err)
	}
	if err := os.WriteFile(out, []byte(spec), 0o644); err != nil {
		return true, contract.Errorf(contract.Permanent, "write %s: %w", out, err)
	}
	sum["file"] = out
	if g.json {
		writeJSON(ios, sum)
		return true, nil
	}
	return false, nil
}

// checkWritten loads the file init wrote: it must validate, or, when init
// left decisions open, fail on them alone (docs/job-file.md, "Starting
// from idemsync init").
func checkWritten(spec, abs string, decide []string) error {
	// The file's ${VAR}s (auth from --openapi) are the user's to set.
	anyVar := func(string) (string, bool) { return "x", true }
	_, err := jobfile.LoadResources([]byte(spec), abs, anyVar)
	if err == nil && len(decide) == 0 {
		return nil
	}
	var se *jobfile.SpecError
	if err != nil && len(decide) > 0 && errors.As(err, &se) && len(se.Problems) == len(decide) &&
		!slices.ContainsFunc(se.Problems, func(p string) bool { return !strings.Contains(p, "decide: left open by idemsync init") }) {
		return nil
	}
	if err != nil && len(decide) > 0 && errors.As(err, &se) && slices.ContainsFunc(se.Problems, func(p string) bool { return strings.Contains(p, "decide: left open by idemsync init") }) {
		// A resources file reports its first resource's problems: the
		// decisions are among them.
		return nil
	}
	return contract.Errorf(contract.Permanent, "init wrote a job file that does not validate as it should (please report it): %v\n%s", err, spec)
}
