package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newQuantErrorCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "quant-error",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("quant-error: not built yet") },
	}
}
