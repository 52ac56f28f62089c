package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvcfg/kvcfg/internal/cmdline"
)

func newCompletionCmd() *cmdline.Command {
	return &cmdline.Command{
		Use:   "completion SHELL",
		Short: "Print a shell completion script for kvcfg and kvcfg-net (bash, zsh or fish)",
		Long: `completion prints a script that completes kvcfg's and kvcfg-net's commands
and each command's flags in bash, zsh or fish.`,
		Example: `  source <(kvcfg completion bash)
  kvcfg completion zsh > "${fpath[1]}/_kvcfg"
  kvcfg completion fish > ~/.config/fish/completions/kvcfg.fish`,
		RunE: func(cmd *cmdline.Command, args []string) error {
			if len(args) != 1 {
				return InputError(fmt.Errorf("give one shell: %s", strings.Join(cmdline.Shells, ", ")))
			}
			// The whole tree, every command with its flags.
			root := newRoot(strings.NewReader(""), io.Discard, io.Discard, "")
			if err := root.WriteCompletion(cmd.OutOrStdout(), args[0], "kvcfg", helperName); err != nil {
				return InputError(err)
			}
			return nil
		},
	}
}
