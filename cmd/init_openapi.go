package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/initgen"
)

// runInitOpenAPI is init --openapi: the resources file for the list
// operations of an OpenAPI description (docs/job-file.md, "Starting from
// idemsync init").
func runInitOpenAPI(ctx context.Context, g *globalOpts, ios *IOStreams, o *initOpts) error {
	if o.name != "" && !initgen.ValidJobName(o.name) {
		return &usageError{err: fmt.Errorf("init: --name %q may only contain letters, digits, _ and -", o.name)}
	}
	doc, err := initgen.ReadOpenAPI(ctx, o.openapi)
	if err != nil {
		return err
	}
	spec, sum, err := initgen.BuildOpenAPI(doc, initgen.OpenAPIOptions{Path: o.path, All: o.all, Name: o.name})
	if err != nil {
		return err
	}
	out := o.out
	if out == "" {
		out = sum["job"].(string) + ".yaml"
	}
	if out != "-" && !o.force {
		if _, err := os.Stat(out); err == nil {
			return &usageError{err: fmt.Errorf("init: %s exists; choose another --out or add --force", out)}
		}
	}
	abs := ""
	if out != "-" {
		if abs, err = filepath.Abs(out); err != nil {
			return err
		}
	}
	decide := sum["decide"].([]string)
	if err := checkWritten(spec, abs, decide); err != nil {
		return err
	}
	if out == "-" {
		fmt.Fprint(ios.Out, spec)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return contract.Errorf(contract.Permanent, "init: create the folder of %s: %w", out, err)
	}
	if err := os.WriteFile(out, []byte(spec), 0o644); err != nil {
		return contract.Errorf(contract.Permanent, "write %s: %w", out, err)
	}
	sum["file"] = out
	if g.json {
		writeJSON(ios, sum)
		return nil
	}
	fmt.Fprintf(ios.Out, "wrote %s: %v resources %v\n", out, sum["resources"], sum["styles"])
	if len(decide) > 0 {
		fmt.Fprintf(ios.Out, "%d decision(s) left open, which validate and run refuse until made:\n", len(decide))
		for _, d := range decide {
			fmt.Fprintf(ios.Out, "  %s\n", d)
		}
		return nil
	}
	if !g.quiet {
		fmt.Fprintf(ios.Out, "next: set the auth variables it names, then\n  idemsync validate %s\n  idemsync run %s\n", out, out)
	}
	return nil
}
