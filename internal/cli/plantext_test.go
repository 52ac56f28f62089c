package cli

import (
	"bytes"
	"testing"
)

// The table and markdown views are plan.Report's printers applied to the
// report `-o json` prints (plan/testdata/text pins the printers' bytes).
func TestPlanTextIsReportPrinter(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--model", "openai/gpt-oss-120b"},
		{"--model", "meta-llama/Llama-3.1-70B-Instruct"},
		{"--engine", "vllm", "--model", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp-size", "4"},
	} {
		rep, _, code := planJSON(t, args...)
		var text, md bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			format, want string
		}{{"table", text.String()}, {"markdown", md.String()}} {
			out, _, c := run(t, append([]string{"plan", "-o", v.format}, args...)...)
			if c != code || out != v.want {
				t.Errorf("%v -o %s: exit %d (json: %d)\n%s\nwant\n%s", args, v.format, c, code, out, v.want)
			}
		}
	}
}
