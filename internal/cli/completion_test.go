package cli

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The bash script completes command names and, after one, its flags; zsh
// loads the same through bashcompinit; fish gets one line per command and
// flag. An unknown shell is bad input.
func TestCompletion(t *testing.T) {
	out, errOut, code := run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "complete -o default -F _kvcfg_complete kvcfg kvcfg-net\n") {
		t.Fatalf("bash: exit %d %s\n%s", code, errOut, out)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		for _, tt := range []struct{ words, want, not string }{
			{"kvcfg pl", "plan", "fit"},
			{"kvcfg plan --tp", "--tp-size", "--output"},
			{"kvcfg-net serve --", "", "--tp-size"}, // serve's flags are kvcfg-net's
			{"kvcfg quant --dt", "--dtype", "--tp-size"},
		} {
			words := strings.Fields(tt.words)
			if strings.HasSuffix(tt.words, " ") {
				words = append(words, "")
			}
			script := out + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_kvcfg_complete\necho \"${COMPREPLY[*]}\"\n"
			got, err := exec.Command(bash, "-c", script).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", tt.words, err, got)
			}
			reply := " " + strings.TrimSpace(string(got)) + " "
			if (tt.want != "" && !strings.Contains(reply, " "+tt.want+" ")) || strings.Contains(reply, " "+tt.not+" ") {
				t.Errorf("%q completes to %q, want %q and not %q", tt.words, reply, tt.want, tt.not)
			}
		}
	}
	out, _, code = run(t, "completion", "zsh")
	if code != 0 || !strings.HasPrefix(out, "# zsh completion") || !strings.Contains(out, "bashcompinit") {
		t.Errorf("zsh: exit %d\n%.200s", code, out)
	}
	out, _, code = run(t, "completion", "fish")
	if code != 0 || !strings.Contains(out, "complete -c kvcfg-net -n '__fish_seen_subcommand_from plan' -l output -s o -r -d 'output format") {
		t.Errorf("fish: exit %d\n%.300s", code, out)
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		if _, errOut, code := run(t, args...); code != 2 || !strings.Contains(errOut, "bash, zsh, fish") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}
