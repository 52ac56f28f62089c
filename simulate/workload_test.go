package simulate

import (
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestTraceReader(t *testing.T) {
	in := `# a comment
{"arrival_s": 0.25, "prompt_tokens": 2000, "output_tokens": 500, "prefix_group": 3, "prefix_tokens": 1500}

{"arrival_s": 0.5, "prompt_ids": [1, 2, 3], "output_tokens": 4}
`
	tr := NewTraceReader(strings.NewReader(in))
	r, err := tr.Next()
	if err != nil || r.PromptTokens != 2000 || r.PrefixGroup != 3 || r.PrefixTokens != 1500 || r.ArrivalS != 0.25 {
		t.Fatalf("line 2: %+v %v", r, err)
	}
	r, err = tr.Next()
	if err != nil || r.PromptTokens != 3 || len(r.PromptIDs) != 3 {
		t.Fatalf("line 4: %+v %v", r, err)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

func TestTraceReaderErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"arrival_s": 1, "prompt_tokens": 0, "output_tokens": 1}`, "line 1: prompt_tokens 0 must be at least 1"},
		{`{"arrival_s": 1, "prompt_tokens": 5, "output_tokens": 1, "prefix_tokens": 6}`, "prefix_tokens 6 must be between 0 and prompt_tokens 5"},
		{`{"arrival_s": 2, "prompt_tokens": 5, "output_tokens": 1}` + "\n" + `{"arrival_s": 1, "prompt_tokens": 5, "output_tokens": 1}`, "line 2: arrival_s 1 is before the previous line's 2"},
		{`{"arrival_s": 1, "prompt": 5}`, `unknown field "prompt"`},
		{`{"arrival_s": -1, "prompt_tokens": 5, "output_tokens": 1}`, "arrival_s -1 must be"},
		{`{"prompt_tokens": 2, "prompt_ids": [1], "output_tokens": 1}`, "disagrees"},
		{`[1,2]`, "line 1"},
	} {
		tr := NewTraceReader(strings.NewReader(c.in))
		var err error
		for err == nil {
			_, err = tr.Next()
		}
		if !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzTraceReader(f *testing.F) {
	f.Add(`{"arrival_s": 0.25, "prompt_tokens": 2000, "output_tokens": 500, "prefix_group": 3, "prefix_tokens": 1500}`)
	f.Add(`{"arrival_s": 0, "prompt_ids": [1,2], "output_tokens": 1}`)
	f.Fuzz(func(t *testing.T, in string) {
		tr := NewTraceReader(strings.NewReader(in))
		for i := 0; i < 100; i++ {
			r, err := tr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrWorkload) {
					t.Fatalf("error %v wraps neither io.EOF nor ErrWorkload", err)
				}
				return
			}
			if r.Validate() != nil {
				t.Fatalf("invalid request returned: %+v", r)
			}
		}
	})
}

func drain(t *testing.T, g Generator) []Request {
	t.Helper()
	src, err := g.Source()
	if err != nil {
		t.Fatal(err)
	}
	var out []Request
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}

func TestGeneratorPoissonSharedPrefix(t *testing.T) {
	g := Generator{Requests: 20000, Rate: 50, Prompt: Lengths{Mean: 100}, Output: Lengths{Kind: DistUniform, Min: 10, Max: 20},
		SharedPrefix: 500, PrefixGroups: 4, Seed: 1}
	rs := drain(t, g)
	if len(rs) != 20000 {
		t.Fatalf("%d requests", len(rs))
	}
	groups := map[int]int{}
	last := 0.0
	for _, r := range rs {
		if r.ArrivalS < last || r.PromptTokens != 600 || r.PrefixTokens != 500 || r.OutputTokens < 10 || r.OutputTokens > 20 {
			t.Fatalf("bad request %+v", r)
		}
		last = r.ArrivalS
		groups[r.PrefixGroup]++
	}
	if len(groups) != 4 {
		t.Errorf("groups %v, want 4", groups)
	}
	// Mean rate within 3% of 50/s.
	if rate := float64(len(rs)-1) / last; math.Abs(rate-50)/50 > 0.03 {
		t.Errorf("rate %v, want about 50", rate)
	}
	// Same seed, same workload.
	if again := drain(t, g); !reflect.DeepEqual(again[777], rs[777]) {
		t.Errorf("not reproducible: %+v vs %+v", again[777], rs[777])
	}
}

func TestGeneratorMultiTurn(t *testing.T) {
	g := Generator{Requests: 9, Rate: 1, Arrival: ArrivalFixed, Prompt: Lengths{Mean: 10}, Output: Lengths{Mean: 5}, Turns: 3, ThinkS: 10, Seed: 2}
	rs := drain(t, g)
	if len(rs) != 9 {
		t.Fatalf("%d requests", len(rs))
	}
	ctx := map[int]int{}
	for _, r := range rs {
		if r.Session == 0 {
			t.Fatalf("no session: %+v", r)
		}
		if want := ctx[r.Session] + 10; r.PromptTokens != want {
			t.Errorf("session %d prompt %d, want %d (previous turns + 10)", r.Session, r.PromptTokens, want)
		}
		ctx[r.Session] = r.PromptTokens + r.OutputTokens
	}
	if len(ctx) != 3 {
		t.Errorf("sessions %v, want 3", ctx)
	}
}

func TestGeneratorLogNormal(t *testing.T) {
	rs := drain(t, Generator{Requests: 5000, Prompt: Lengths{Kind: DistLogNormal, Mean: 1000, Sigma: 0.5, Max: 4000}, Output: Lengths{Mean: 1}, Seed: 3})
	below := 0
	for _, r := range rs {
		if r.PromptTokens < 1 || r.PromptTokens > 4000 {
			t.Fatalf("length %d outside the clamp", r.PromptTokens)
		}
		if r.PromptTokens < 1000 {
			below++
		}
	}
	if f := float64(below) / 5000; math.Abs(f-0.5) > 0.03 {
		t.Errorf("%.3f below the median, want about 0.5", f)
	}
}

func TestGeneratorValidate(t *testing.T) {
	err := Generator{Requests: 0, Rate: -1, Prompt: Lengths{Kind: "zipf"}, Output: Lengths{Mean: 0}}.Validate()
	for _, want := range []string{"requests 0", "rate -1", `"zipf"`, "output length 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// Multi-turn sessions hit their own history in the radix cache.
func TestMultiTurnHits(t *testing.T) {
	g := Generator{Requests: 30, Rate: 1, Prompt: Lengths{Mean: 50}, Output: Lengths{Mean: 20}, Turns: 3, ThinkS: 30, Seed: 4}
	src, _ := g.Source()
	var reqs []Request
	for {
		r, err := src.Next()
		if err != nil {
			break
		}
		reqs = append(reqs, r)
	}
	sum := runChecked(t, Config{Engine: EngineSGLang, MaxTotalNumTokens: 100000, Time: TimeModel{ConstantStepS: 0.02}}, reqs)
	// Turn 2 hits 69 of 120 tokens (the previous prompt+output minus the
	// last token), turn 3 hits 139 of 190.
	if sum.CachedPromptTokens != 10*(69+139) {
		t.Errorf("cached %d, want %d", sum.CachedPromptTokens, 10*(69+139))
	}
}
