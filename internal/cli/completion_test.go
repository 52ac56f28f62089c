package cli

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The bash script (cobra's) completes command names and, after one, its
// flags: bash loads it and, as on a real command line, it asks kvcfg
// (here the test binary, run as kvcfg) with `kvcfg __complete ...`.
func TestCompletionBash(t *testing.T) {
	out, errOut, code := run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "complete -o default -F __start_kvcfg kvcfg") {
		t.Fatalf("bash: exit %d %s\n%.300s", code, errOut, out)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv(asKvcfgEnv, "1")
	// kvcfg is a shell function that runs the test binary as kvcfg;
	// _get_comp_words_by_ref stands in for the bash-completion package's,
	// which the script calls where it is not installed.
	prelude := "kvcfg() { " + strconv.Quote(exe) + ` "$@"; }` + "\n" +
		`_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }` + "\n"
	for _, tt := range []struct{ words, want, not string }{
		{"kvcfg pl", "plan", "fit"},
		{"kvcfg plan --tp", "--tp-size", "--output"},
		{"kvcfg serve --hub", "--hub-timeout", "--hub-concurrency"}, // deprecated flags are not offered
		{"kvcfg quant --dt", "--dtype", "--tp-size"},
		{"kvcfg completion ", "powershell", "plan"},
		{"kvcfg plan --gpu H20", "H200", "H100-80GB"},
	} {
		words := strings.Fields(tt.words)
		if strings.HasSuffix(tt.words, " ") {
			words = append(words, "")
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = strconv.Quote(w)
		}
		line := strings.Join(words, " ")
		script := prelude + out + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\nCOMP_LINE=" + strconv.Quote(line) + "\nCOMP_POINT=" + strconv.Itoa(len(line)) +
			"\n__start_kvcfg\necho \"${COMPREPLY[*]}\"\n"
		got, err := exec.Command(bash, "-c", script).Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.words, err, got)
		}
		reply := " " + strings.TrimSpace(string(got)) + " "
		if !strings.Contains(reply, " "+tt.want+" ") || strings.Contains(reply, " "+tt.not+" ") {
			t.Errorf("%q completes to %q, want %q and not %q", tt.words, reply, tt.want, tt.not)
		}
	}
}

// The other shells' scripts come from cobra too; kvcfg's __complete
// answers them all (flags after a command, one per line, then the
// directive). No shell, or one cobra has no script for, is bad input.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"zsh":        "#compdef kvcfg",
		"fish":       "complete -c kvcfg ",
		"powershell": "Register-ArgumentCompleter",
	} {
		if out, errOut, code := run(t, "completion", shell); code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d %s\n%.300s", shell, code, errOut, out)
		}
	}
	out, errOut, code := run(t, "__complete", "plan", "--out")
	if code != 0 || !strings.Contains(out, "--output\t") || !strings.HasSuffix(out, "\n:4\n") {
		t.Errorf("__complete plan --out: exit %d %s\n%s", code, errOut, out)
	}
	// Flag values: catalog models, GPUs, engines.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "plan", "--gpu", ""}, "H100-80GB\n"},
		{[]string{"__complete", "fit", "--gpus", ""}, "H200\n"},
		{[]string{"__complete", "compare", "--model", ""}, "Qwen/Qwen3-8B\n"},
		{[]string{"__complete", "simulate", "--engine", ""}, "trtllm\n"},
	} {
		if out, errOut, code := run(t, tt.args...); code != 0 || !strings.Contains(out, tt.want) || !strings.HasSuffix(out, "\n:4\n") {
			t.Errorf("%v: exit %d %s\n%s", tt.args, code, errOut, out)
		}
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		if _, errOut, code := run(t, args...); code != 2 || !strings.Contains(errOut, completionShells) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}
