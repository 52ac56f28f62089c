package plan

import (
	"errors"
	"fmt"
	"strings"
)

// WithFix words an infeasible plan's error the way kvcfg says it everywhere
// (CLI and HTTP API): the engine's error, then a "fix:" line naming what to
// change, unless the error already says it. Other errors, and reports
// without a fix, come back unchanged; the result still wraps err.
func WithFix(err error, rep *Report) error {
	if err == nil || rep == nil || rep.FixFlag == "" || !errors.Is(err, ErrInfeasible) {
		return err
	}
	if rep.FixHint != "" && strings.Contains(err.Error(), rep.FixHint) {
		return err
	}
	fix := rep.FixHint
	if fix == "" {
		fix = "change " + rep.FixFlag
	}
	return fmt.Errorf("%w\nfix: %s", err, fix)
}
