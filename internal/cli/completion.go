package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
)

// completionShells are the shells cobra's completion command writes
// scripts for (its subcommands).
const completionShells = "bash, zsh, fish, powershell"

// shellsAreInput makes `kvcfg completion` without a shell, or with one
// cobra has no script for, bad input (exit status 2) instead of its help.
func shellsAreInput(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("no completion for shell %q (accepted: %s)", args[0], completionShells)
			}
			return nil
		}
		c.RunE = func(*cobra.Command, []string) error {
			return InputError(fmt.Errorf("give one shell: %s", completionShells))
		}
	}
}

// flagValues are the flags whose values the shell completes, with the
// values: catalog models, GPU names and engines.
var flagValues = map[string]func() []string{
	"model":   catalog.Names,
	"gpu":     gpu.Names,
	"gpus":    gpu.Names,
	"engine":  plan.Engines,
	"engines": plan.Engines,
}

// completeFlagValues registers the completion of flagValues' flags on
// every command of root that has them (only a process building the whole
// tree, as __complete does, pays for it).
func completeFlagValues(root *cobra.Command) {
	for _, c := range root.Commands() {
		for name, values := range flagValues {
			if c.Flags().Lookup(name) == nil {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return values(), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
}
