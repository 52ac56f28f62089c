package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newGPUsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gpus",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("gpus: not built yet") },
	}
}
