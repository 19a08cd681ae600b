package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	idsync "github.com/idemsync/idemsync/sync"
)

func newVersionCmd(g *globalOpts, ios *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and build date",
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if g.json {
				writeJSON(ios, map[string]string{"version": idsync.Version, "commit": idsync.Commit, "date": idsync.Date, "go": runtime.Version()})
				return nil
			}
			fmt.Fprintf(ios.Out, "idemsync %s (commit %s, built %s, %s)\n", idsync.Version, idsync.Commit, idsync.Date, runtime.Version())
			return nil
		},
	}
}
