package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// completionOptions are the parsed command line of completion: the shell
// and the command whose completion is printed.
type completionOptions struct {
	io    *IOStreams
	shell string
	root  *cobra.Command
}

// newCmdCompletion prints a shell completion script. It replaces cobra's
// default completion command so that an unknown shell is a usage error
// (exit 2) like every other one.
func newCmdCompletion(f *Factory, runF func(*completionOptions) error) *cobra.Command {
	o := &completionOptions{io: f.IOStreams}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or powershell",
		Long: `Print the completion script of idemsync for a shell on stdout. Commands,
flags, job files (*.yaml, *.yml) and flag values complete: --resource with
the resources of the job file on the line, --log-format, --log-level, and
files for --state (*.db), --metrics-file (*.prom) and --out.

  bash:        idemsync completion bash > /etc/bash_completion.d/idemsync
               (or: source <(idemsync completion bash) in ~/.bashrc)
               The script needs the bash-completion package, which a
               minimal Debian or Ubuntu lacks: apt-get install bash-completion
               (then open a new login shell). macOS: brew install bash-completion@2.
  zsh:         idemsync completion zsh > "${fpath[1]}/_idemsync"
  fish:        idemsync completion fish > ~/.config/fish/completions/idemsync.fish
  powershell:  idemsync completion powershell | Out-String | Invoke-Expression

Release archives ship these scripts in completions/.`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.shell, o.root = args[0], c.Root()
			if runF != nil {
				return runF(o)
			}
			ios, root := o.io, o.root
			switch o.shell {
			case "bash":
				return root.GenBashCompletionV2(ios.Out, true)
			case "zsh":
				return root.GenZshCompletion(ios.Out)
			case "fish":
				return root.GenFishCompletion(ios.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(ios.Out)
			}
			return &usageError{err: fmt.Errorf("completion: unknown shell %q (want bash, zsh, fish or powershell)", o.shell)}
		},
	}
}
