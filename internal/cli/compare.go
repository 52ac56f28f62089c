package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this command): placeholder until the command lands.
func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "compare",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("compare: not built yet") },
	}
}
