//go:build !unix

package cli

import "errors"

// execProcess cannot replace the process here; forward runs a child.
func execProcess(string, []string, []string) error {
	return errors.ErrUnsupported
}
