package ingest

import (
	"bufio"
	"fmt"
	"os"

	"viewer/web/ingest/perfdata"
)

// perfSpool is where a zstd-compressed perf.data's records (perf record
// -z) are decompressed to: a file in the spool directory, mapped once
// written, so that they are read with about a window of them resident,
// as a plain recording's mapped data section is, instead of in the heap.
// release unmaps and removes it.
type perfSpool struct {
	f     *os.File
	w     *bufio.Writer
	n     int64
	unmap func()
}

func newPerfSpool(dir string) (*perfSpool, error) {
	f, err := os.CreateTemp(dir, "viewer-perf-records-*")
	if err != nil {
		return nil, err
	}
	return &perfSpool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (s *perfSpool) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

// Map flushes what was written and maps it (perfdata.Spool); where files
// cannot be mapped, it reads them into memory.
func (s *perfSpool) Map() ([]byte, func(lo, hi int), error) {
	if err := s.w.Flush(); err != nil {
		return nil, nil, err
	}
	if s.n == 0 {
		return nil, nil, nil
	}
	data, evict, unmap, err := mapFile(s.f, s.n)
	if err == nil {
		s.unmap = unmap
		return data, evict, nil
	}
	data = make([]byte, s.n)
	if _, err := s.f.ReadAt(data, 0); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", s.f.Name(), err)
	}
	return data, nil, nil
}

func (s *perfSpool) release() {
	if s.unmap != nil {
		s.unmap()
	}
	removeSpool(s.f)
}

// perfSpools makes the spool files of one perf.data parse (Options.Spool)
// and releases them all when it is done.
type perfSpools struct {
	dir    string
	spools []*perfSpool
}

func (ps *perfSpools) spool() (perfdata.Spool, error) {
	s, err := newPerfSpool(ps.dir)
	if err != nil {
		return nil, err
	}
	ps.spools = append(ps.spools, s)
	return s, nil
}

func (ps *perfSpools) release() {
	for _, s := range ps.spools {
		s.release()
	}
}
