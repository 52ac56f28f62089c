package cli

import (
	"regexp"
	"strings"
	"testing"
)

var (
	// ungrouped is a whole number of five digits or more written without
	// thousands separators (not part of a name, a version, an issue
	// number "#54458", a flag value "=32768" or a decimal).
	ungrouped = regexp.MustCompile(`(?:^|[^0-9A-Za-z.,#_=/:-])([0-9]{5,})(?:\.[0-9]+)?(?:$|[^0-9A-Za-z.,])`)
	// floatNoise is a float printed with its binary noise (0.30000000000000004).
	floatNoise = regexp.MustCompile(`[0-9]\.[0-9]*(?:0{6,}|9{6,})[1-9][0-9]*`)
	// cmdArgs are the flags and option=value words of printed command
	// lines: values to paste, not numbers to read.
	cmdArgs = regexp.MustCompile(`--[a-z0-9_-]+(?:[ =][^ ]+)?|[a-z_.]+=[^ ]+`)
)

// numberProblems lists the lines of a command's text output whose numbers
// are printed unlike the rest: an integer of 10,000 or more without
// separators, or float noise. The engine's own log lines and messages
// (quoted as the engine prints them) and flags are left out.
func numberProblems(out string) []string {
	var bad []string
	inLog := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(l) == "ENGINE LOG" || strings.HasPrefix(l, "## Engine log"):
			inLog = true
			continue
		case inLog && strings.TrimSpace(l) == "":
			inLog = false
			continue
		case inLog, strings.HasPrefix(l, "```"):
			continue
		}
		scan := cmdArgs.ReplaceAllString(l, "")
		if m := ungrouped.FindStringSubmatch(scan); m != nil {
			bad = append(bad, "ungrouped "+m[1]+": "+strings.TrimSpace(l))
		}
		if m := floatNoise.FindString(scan); m != "" {
			bad = append(bad, "float noise "+m+": "+strings.TrimSpace(l))
		}
	}
	return bad
}

// Numbers in text output are grouped and rounded alike (issue 32): no
// ungrouped integer of 10,000 or more, no float noise, in the text of the
// commands an operator reads (the engines' own log lines stay verbatim).
func TestTextNumbersGrouped(t *testing.T) {
	for _, args := range [][]string{
		{"plan"},
		{"plan", "--engine", "vllm"},
		{"plan", "--engine", "trtllm"},
		{"plan", "--model", "google/gemma-3-1b-pt", "--engine", "vllm"},
		{"plan", "--model", "Qwen/Qwen3-30B-A3B", "-o", "markdown"},
		{"plan", "--tp-size", "1,2", "--kv-cache-dtype", "auto,fp8_e4m3"},
		{"compare", "--engine", "sglang,vllm,trtllm"},
		{"compare", "--engine", "sglang,vllm", "-o", "markdown"},
		{"fit", "-n", "8", "--context-length", "32768", "--gpus", "H100,L40S"},
		{"fit", "--engines", "sglang,vllm,trtllm", "-n", "16", "--context-length", "32768", "--gpus", "H100"},
		{"simulate", "--rate", "20", "--requests", "300", "--prompt-len", "3000", "--output-len", "500"},
		{"simulate", "--engine", "vllm", "--rate", "5", "--requests", "100", "--prompt-len", "2000", "--output-len", "200"},
		{"models"},
		{"gpus"},
		{"inspect", "meta-llama/Llama-3.1-8B-Instruct"},
	} {
		out, errOut, code := run(t, args...)
		if code != 0 && code != 3 {
			t.Errorf("kvcfg %s: exit %d %s", strings.Join(args, " "), code, errOut)
			continue
		}
		for _, p := range numberProblems(out) {
			t.Errorf("kvcfg %s: %s", strings.Join(args, " "), p)
		}
	}
}

// The scanner finds what it should, and leaves flags, names and the
// engine's log alone.
func TestNumberProblems(t *testing.T) {
	out := "cell_size  131072 bytes\nok 131,072 and 0.83\nnoise 0.30000000000000004\nflags: --context-length 32768 kv_cache_config.dtype=fp8\n" +
		"model c4ai-command-a-03-2025 (vllm#54458)\n\nENGINE LOG\n  #tokens: 411217\n\nafter 12345\nqueue 29080.57 s, 0.10.2 and 1,041.69\n"
	got := numberProblems(out)
	if len(got) != 4 || !strings.Contains(got[0], "131072") || !strings.Contains(got[1], "0.30000000000000004") || !strings.Contains(got[2], "12345") || !strings.Contains(got[3], "29080") {
		t.Errorf("numberProblems = %q", got)
	}
}
