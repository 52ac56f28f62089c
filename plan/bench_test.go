package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/plan"
)

func BenchmarkRunDefault(b *testing.B) {
	for b.Loop() {
		if _, err := plan.Run(context.Background(), plan.Request{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunInfeasible(b *testing.B) {
	for b.Loop() {
		_, _ = plan.Run(context.Background(), plan.Request{Model: "moonshotai/Kimi-K2-Instruct"})
	}
}

// BenchmarkRunFile plans a config.json path already resolved once: no file
// is read or stat'ed again (compare with BenchmarkRunDefault, a catalog
// model, in the same run).
func BenchmarkRunFile(b *testing.B) {
	dir := b.TempDir()
	cfg, err := catalog.Config(catalog.Default)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	req := plan.Request{Model: path}
	if _, err := plan.Run(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := plan.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
