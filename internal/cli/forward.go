package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// helperName is the program that has the network linked in: kvcfg's
// command line plus serve and the Hub client (cmd/kvcfg-net).
const helperName = "kvcfg-net"

// errNeedsNetwork is what a command gets where it needs the network and
// this program does not link it; Main then runs the command as kvcfg-net.
var errNeedsNetwork = errors.New("cli: needs the network front end")

// forwardKey is the context key of Main's *forwardState.
type forwardKey struct{}

// forwardState records that a command needed the network, and for what.
type forwardState struct {
	mu  sync.Mutex
	why string
}

func (s *forwardState) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

// needNetwork records, for Main, that the command runs as kvcfg-net
// because of why ("serve", "reading org/name from the Hugging Face Hub"),
// and returns errNeedsNetwork for the caller to return.
func needNetwork(ctx context.Context, why string) error {
	if s, _ := ctx.Value(forwardKey{}).(*forwardState); s != nil {
		s.mu.Lock()
		if s.why == "" {
			s.why = why
		}
		s.mu.Unlock()
	}
	return fmt.Errorf("%w: %s", errNeedsNetwork, why)
}

// recordingReader keeps what was read from standard input, for kvcfg-net
// to read again.
type recordingReader struct {
	r   io.Reader
	buf []byte
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// forwardedEnv marks a process that kvcfg started as kvcfg-net: one that
// has not linked the network either (KVCFG_NET naming kvcfg itself) stops
// instead of starting itself again.
const forwardedEnv = "KVCFG_FORWARDED"

// forward runs args as kvcfg-net and returns its exit status. When this
// process owns the standard streams and read nothing from standard input,
// kvcfg-net replaces it (Unix), so signals and the exit status are its
// own; otherwise it runs as a child that reads what this process read
// from standard input first, then the rest.
func forward(why string, args []string, in *recordingReader, stdout, stderr io.Writer) int {
	if os.Getenv(forwardedEnv) != "" {
		fmt.Fprintf(stderr, "kvcfg: %s needs the network front end, and this program, started as %s, does not have it: point KVCFG_NET at kvcfg-net\n", why, helperName)
		return 1
	}
	path, err := helperPath()
	if err != nil {
		fmt.Fprintf(stderr, "kvcfg: %s needs %s, kvcfg's network front end (the HTTP server and the Hugging Face Hub client), which is neither next to this kvcfg nor on PATH (%v): install both with \"go install github.com/kvcfg/kvcfg/cmd/...@latest\", set KVCFG_NET to its path, or, in a checkout, run: go run ./cmd/%s %s\n",
			why, helperName, err, helperName, shellJoin(args))
		return 1
	}
	env := append(os.Environ(), forwardedEnv+"=1")
	if len(in.buf) == 0 && in.r == io.Reader(os.Stdin) && stdout == io.Writer(os.Stdout) && stderr == io.Writer(os.Stderr) {
		err := execProcess(path, append([]string{path}, args...), env)
		if !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintf(stderr, "kvcfg: %s: running %s: %v\n", why, path, err)
			return 1
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin = io.MultiReader(bytes.NewReader(in.buf), in.r)
	if f, ok := in.r.(*os.File); ok && len(in.buf) == 0 {
		cmd.Stdin = f // inherited: nothing to replay
	}
	// A terminal that never sends EOF must not keep Wait copying after
	// kvcfg-net has exited.
	cmd.WaitDelay = time.Second
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "kvcfg: %s: running %s: %v\n", why, path, err)
		return 1
	}
	// SIGINT and SIGTERM go on to kvcfg-net (serve shuts down gracefully).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			if ps := cmd.ProcessState; ps != nil && ps.Exited() {
				return ps.ExitCode()
			}
			if err != nil {
				fmt.Fprintf(stderr, "kvcfg: %s: running %s: %v\n", why, path, err)
			}
			return 1 // killed by a signal
		}
	}
}

// shellJoin writes args as a POSIX shell would read them back: words of
// safe characters as they are, others single-quoted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		safe := a != ""
		for _, c := range a {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@,+%", c)) {
				safe = false
				break
			}
		}
		if safe {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// helperPath finds kvcfg-net: $KVCFG_NET, else next to this program, else
// on PATH.
func helperPath() (string, error) {
	if p := os.Getenv("KVCFG_NET"); p != "" {
		return p, nil
	}
	name := helperName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return exec.LookPath(name)
}
