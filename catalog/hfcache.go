package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvcfg/kvcfg/internal/inputfile"
	"github.com/kvcfg/kvcfg/model"
)

// ErrNotCached reports a model that is not in the local HuggingFace hub cache.
var ErrNotCached = errors.New("catalog: not in the HuggingFace cache")

// HFCacheDir returns the HuggingFace hub cache root: $HF_HUB_CACHE, else
// the legacy $HUGGINGFACE_HUB_CACHE, else HFHome()/hub. It never touches
// the network.
func HFCacheDir() string {
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := os.Getenv(k); d != "" {
			return expandHome(d)
		}
	}
	if h := HFHome(); h != "" {
		return filepath.Join(h, "hub")
	}
	return ""
}

// HFHome returns $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface ("" when no home directory is known).
func HFHome() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return expandHome(d)
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(expandHome(d), "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// expandHome expands a leading "~/" as the Python client does.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// isRepoID reports whether id is "org/name", each part a letter or digit
// followed by letters, digits and "._-" (the Hub's repository names).
// Hand-written rather than a regexp compiled at start-up: every kvcfg
// process would pay for it.
func isRepoID(id string) bool {
	org, name, ok := strings.Cut(id, "/")
	return ok && isRepoPart(org) && isRepoPart(name)
}

func isRepoPart(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// IsCommit reports whether s is a full commit hash: 40 lowercase hex
// digits (a revision that names a snapshot directly).
func IsCommit(s string) bool { return len(s) == 40 && IsLowerHex(s) }

// IsLowerHex reports whether s is all lowercase hex digits (the Hub's
// commit and blob names). Hand-written: a regexp compiled at start-up
// would cost every kvcfg process.
func IsLowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CachedSnapshot returns the snapshot directory of HF id "org/name" (or
// "org/name@revision", default revision "main") in the local hub cache:
// <root>/models--org--name/snapshots/<commit>, the commit read from
// refs/<revision> unless the revision is a 40-hex commit. When refs/main is
// missing but exactly one snapshot holds a config.json, that one is used.
func CachedSnapshot(ref string) (string, error) {
	id, rev, _ := strings.Cut(strings.TrimSpace(ref), "@")
	if !isRepoID(id) || strings.Contains(id, "..") {
		return "", fmt.Errorf("%w: %q is not an org/name id", ErrNotCached, ref)
	}
	if rev == "" {
		rev = "main"
	}
	root := HFCacheDir()
	if root == "" {
		return "", fmt.Errorf("%w: no cache directory", ErrNotCached)
	}
	repo := filepath.Join(root, "models--"+strings.ReplaceAll(id, "/", "--"))
	commit := rev
	if !IsCommit(rev) {
		if strings.ContainsAny(rev, `/\`) || strings.Contains(rev, "..") {
			return "", fmt.Errorf("%w: bad revision %q", ErrNotCached, rev)
		}
		// A ref holds a commit hash; a FIFO or device there is not read.
		b, err := inputfile.ReadFile(filepath.Join(repo, "refs", rev), 4<<10, "a ref")
		if err == nil {
			commit = strings.TrimSpace(string(b))
		} else if rev == "main" {
			commit = soleSnapshot(repo)
		}
		if !IsCommit(commit) {
			return "", fmt.Errorf("%w: %s (revision %s) under %s", ErrNotCached, id, rev, root)
		}
	}
	snap := filepath.Join(repo, "snapshots", commit)
	if _, err := os.Stat(filepath.Join(snap, model.ConfigFile)); err != nil {
		return "", fmt.Errorf("%w: %s has no %s at %s", ErrNotCached, id, model.ConfigFile, commit)
	}
	return snap, nil
}

// soleSnapshot returns the only snapshot with a config.json, or "".
func soleSnapshot(repo string) string {
	entries, err := os.ReadDir(filepath.Join(repo, "snapshots"))
	if err != nil {
		return ""
	}
	found := ""
	for _, e := range entries {
		if !e.IsDir() || !IsCommit(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join(repo, "snapshots", e.Name(), model.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if found != "" {
			return ""
		}
		found = e.Name()
	}
	return found
}
