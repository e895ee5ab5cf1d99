package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progressFlag is --progress: on, off, or (unset) on when standard error
// is a terminal.
type progressFlag struct{ set, on bool }

func (p *progressFlag) String() string {
	if p == nil || !p.set {
		return "auto"
	}
	return strconv.FormatBool(p.on)
}

func (p *progressFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	p.set, p.on = true, v
	return nil
}

func (p *progressFlag) IsBoolFlag() bool { return true }

// meter makes a phaseMeter on w if the flag says so.
func (p *progressFlag) meter(w io.Writer) *phaseMeter {
	tty := isTerminal(w)
	if p.set && !p.on || !p.set && !tty {
		return nil
	}
	return &phaseMeter{w: w, tty: tty}
}

// addProgressFlag adds --progress to fs.
func addProgressFlag(fs *flag.FlagSet) *progressFlag {
	p := &progressFlag{}
	fs.Var(p, "progress", "report bytes read and the conversion's phase on standard error (default: when it is a terminal); --progress=false is quiet")
	return p
}

// phaseMeter shows how far a long command is, one phase at a time
// (reading, sending, converting ...): a progress bar on a terminal, else
// a line when a phase starts and at each tenth of it. A nil meter shows
// nothing. Its methods may be called from any goroutine.
type phaseMeter struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	phase string
	bar   *progressbar.ProgressBar
	tenth int64
	bytes bool
}

// report says phase has done of total units (bytes when unit is "bytes",
// else counts; total 0: unknown). It has ingest.Progress's shape for
// phases counted in records.
func (m *phaseMeter) report(phase string, done, total int64) {
	m.show(phase, done, total, phase == "inflating" || phase == "reading records" || phase == "sending")
}

func (m *phaseMeter) show(phase string, done, total int64, bytes bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if phase != m.phase {
		m.finishLocked()
		m.phase, m.bytes, m.tenth = phase, bytes, -1
		if m.tty {
			opts := []progressbar.Option{
				progressbar.OptionSetWriter(m.w),
				progressbar.OptionSetDescription(phase),
				progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100_000_000), // 100ms
				progressbar.OptionClearOnFinish(),
			}
			if bytes {
				opts = append(opts, progressbar.OptionShowBytes(true))
			}
			if total <= 0 {
				total = -1 // a spinner
			}
			m.bar = progressbar.NewOptions64(total, opts...)
		}
	}
	if m.bar != nil {
		m.bar.Set64(done)
		return
	}
	tenth := int64(0)
	if total > 0 {
		tenth = min(10, done*10/total)
	}
	if tenth == m.tenth {
		return
	}
	m.tenth = tenth
	switch {
	case total <= 0:
		fmt.Fprintf(m.w, "%s\n", phase)
	case bytes:
		fmt.Fprintf(m.w, "%s: %s of %s (%d%%)\n", phase, mb(done), mb(total), done*100/total)
	default:
		fmt.Fprintf(m.w, "%s: %d of %d (%d%%)\n", phase, done, total, done*100/total)
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func (m *phaseMeter) finishLocked() {
	if m.bar != nil {
		m.bar.Finish()
		m.bar = nil
	}
}

// finish clears the bar of the last phase.
func (m *phaseMeter) finish() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finishLocked()
	m.phase = ""
}

// countingReader tells m (phase "sending", or what) how many of total
// bytes were read from r.
type countingReader struct {
	r           io.Reader
	m           *phaseMeter
	phase       string
	done, total int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	c.m.show(c.phase, c.done, c.total, true)
	return n, err
}
