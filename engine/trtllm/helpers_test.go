package trtllm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvcfg/kvcfg/model"
)

// load parses testdata/<name>.json, a real config.json.
func load(t testing.TB, name string) *model.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := model.Parse(data, name)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return s
}
