package cli

import (
	"strings"
	"testing"
)

// plan --help documents every exit status it returns (issue 32).
func TestPlanHelpExitStatuses(t *testing.T) {
	out, _, code := run(t, "plan", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, exits, ok := strings.Cut(out, "Exit status:")
	if !ok {
		t.Fatalf("plan --help has no exit statuses:\n%s", out)
	}
	for _, c := range []string{"\n  0  ", "\n  1  ", "\n  2  ", "\n  3  "} {
		if !strings.Contains(exits, c) {
			t.Errorf("plan --help does not document exit status %q:\n%s", strings.TrimSpace(c), exits)
		}
	}
}

// An over-long context gets one answer on every engine (issue 32): the
// engine refuses it (exit 1) and the fix is the model's longest context.
func TestContextTooLongSameExit(t *testing.T) {
	for e, fix := range map[string]string{"sglang": "--context-length 131072", "vllm": "--max-model-len 131072", "trtllm": "--max-seq-len 131072"} {
		out, errOut, code := run(t, "plan", "--engine", e, "--context-length", "500000")
		if code != 1 || !strings.Contains(out, "fix: set "+fix) {
			t.Errorf("%s: exit %d (want 1) %q\n%.600s", e, code, errOut, out)
		}
	}
}
