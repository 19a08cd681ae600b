package cmd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

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
	if done, err := writeJobFile(ios, g, out, spec, sum); done || err != nil {
		return err
	}
	decide := sum["decide"].([]string)
	styles := sum["styles"].(map[string]string)
	names := slices.Sorted(maps.Keys(styles))
	for i, n := range names {
		names[i] = n + ": " + styles[n]
	}
	fmt.Fprintf(ios.Out, "wrote %s: %v resources (%s)\n", out, sum["resources"], strings.Join(names, ", "))
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
