package cmd

import (
	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/schema"
)

// schemaOptions are the parsed command line of schema (it has no flags of
// its own).
type schemaOptions struct {
	io *IOStreams
}

// newCmdSchema prints the job file's JSON Schema, generated from the Go
// types the loader decodes (the same bytes as schema/job.schema.json).
func newCmdSchema(f *Factory, runF func(*schemaOptions) error) *cobra.Command {
	o := &schemaOptions{io: f.IOStreams}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the job file (for editors and CI)",
		Long: `Print the JSON Schema (draft-07) of the job file on stdout. Editors that use
yaml-language-server validate and complete job files that start with

  # yaml-language-server: $schema=path/to/job.schema.json

The schema checks the file as written: wherever a value is not a plain
string, a ${VAR} reference is accepted too, and the loader checks the value
after expansion (idemsync validate).`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			_, err := o.io.Out.Write(schema.JSON())
			return err
		},
	}
}
