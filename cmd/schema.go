package cmd

import (
	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/schema"
)

// newSchemaCmd prints the job file's JSON Schema, generated from the Go
// types the loader decodes (the same bytes as schema/job.schema.json).
func newSchemaCmd(ios *IOStreams) *cobra.Command {
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
			_, err := ios.Out.Write(schema.JSON())
			return err
		},
	}
}
