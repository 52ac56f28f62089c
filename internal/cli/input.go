package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kvcfg/kvcfg/internal/inputfile"
)

// openInput opens the file a flag names: a regular file only (a named
// pipe, device or directory is refused before a byte is read; the error
// says to stream standard input with "-" where the flag takes it).
func openInput(flag, path string, takesStdin bool) (*os.File, os.FileInfo, error) {
	f, st, err := inputfile.Open(path)
	if err != nil {
		if errors.Is(err, inputfile.ErrNotRegular) && takesStdin {
			return nil, nil, fmt.Errorf("%s: %w: give a file, or stream it on standard input with %s -", flag, err, flag)
		}
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	return f, st, nil
}

// readAllCapped reads r whole when it holds at most limit bytes; past
// that the error names the limit and what to do instead.
func readAllCapped(r io.Reader, limit int64, what, instead string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s holds more than %s, the most read from it: %s", what, inputfile.Bytes(limit), instead)
	}
	return b, nil
}

// contextReader reads r until ctx is done, then returns ctx's error at
// once, even while a read of r is blocked (standard input on a pipe that
// no one writes, which no deadline can interrupt): the blocked read is
// left to finish on its own goroutine.
type contextReader struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // the read in flight, nil when none
	buf     []byte
}

type readResult struct {
	n   int
	err error
}

// newContextReader returns r read under ctx.
func newContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &contextReader{ctx: ctx, r: r}
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.pending == nil {
		if len(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		ch := make(chan readResult, 1)
		go func() {
			n, err := c.r.Read(buf)
			ch <- readResult{n, err}
		}()
		c.pending = ch
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		n := copy(p, c.buf[:res.n])
		return n, res.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}
