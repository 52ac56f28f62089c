//go:build unix

package cli

import "syscall"

// execProcess replaces this process with path; it returns only on error.
func execProcess(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}
