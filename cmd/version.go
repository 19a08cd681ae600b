package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	idsync "github.com/idemsync/idemsync/sync"
)

// buildVersion is what version and --version print: the values stamped
// with -ldflags -X (releases, by goreleaser), else what the Go toolchain
// recorded in the binary (go install's module version; go build's
// vcs.revision, vcs.time and vcs.modified, which -buildvcs=false leaves
// out), else "dev", "none", "unknown".
type buildVersion struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
}

func currentVersion() buildVersion {
	info, ok := debug.ReadBuildInfo()
	return versionFrom(idsync.Version, idsync.Commit, idsync.Date, info, ok)
}

// versionFrom fills what the ldflags left at their defaults from info.
func versionFrom(version, commit, date string, info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if !ok || info == nil {
		return v
	}
	if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if v.Commit == "none" {
				v.Commit = s.Value
			}
		case "vcs.time":
			if v.Date == "unknown" {
				v.Date = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit == "none" && v.Commit != "none" {
		v.Commit += "-dirty"
	}
	return v
}

func (v buildVersion) String() string {
	return fmt.Sprintf("idemsync %s (commit %s, built %s, %s)", v.Version, v.Commit, v.Date, v.Go)
}

// versionOptions are the parsed command line of version.
type versionOptions struct {
	io *IOStreams
	g  *globalOpts
}

func newCmdVersion(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	o := &versionOptions{io: f.IOStreams, g: f.globals}
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and build date",
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			g, ios := o.g, o.io
			v := currentVersion()
			if g.json {
				writeJSON(ios, v)
				return nil
			}
			fmt.Fprintln(ios.Out, v.String())
			return nil
		},
	}
}
