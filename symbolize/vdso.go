package symbolize

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"viewer/symbolize/elfsym"
)

// IsVDSO reports whether a mapping's file names the vDSO, the small shared
// object the kernel maps into every process (clock_gettime, gettimeofday).
func IsVDSO(name string) bool { return name == "[vdso]" }

// IsPseudoBinary is IsPseudo for a mapping with its build ID: a vDSO with
// a build ID has an image to name its addresses from (perf keeps it in its
// build-ID cache; a process on the same kernel maps the same one), so it
// is a binary like the others; without one it has nothing to be found by.
func IsPseudoBinary(file, buildID string) bool {
	if IsVDSO(file) {
		return buildID == ""
	}
	return IsPseudo(file)
}

// runningVDSO is this process's own vDSO, the running kernel's, read once.
var runningVDSO = sync.OnceValue(func() (v struct {
	image   []byte
	buildID string
}) {
	img, err := readVDSO("/proc/self/maps", "/proc/self/mem")
	if err != nil {
		return v
	}
	f, err := elfsym.OpenImage("[vdso]", img)
	if err != nil {
		return v
	}
	defer f.Close()
	v.image, v.buildID = img, f.BuildID()
	return v
})

// readVDSO copies the [vdso] mapping listed in maps out of mem.
func readVDSO(maps, mem string) ([]byte, error) {
	mf, err := os.Open(maps)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	sc := bufio.NewScanner(mf)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != "[vdso]" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start || end-start > 1<<20 {
			return nil, fmt.Errorf("%s: unreadable [vdso] line %q", maps, sc.Text())
		}
		m, err := os.Open(mem)
		if err != nil {
			return nil, err
		}
		defer m.Close()
		b := make([]byte, end-start)
		if _, err := m.ReadAt(b, int64(start)); err != nil {
			return nil, fmt.Errorf("reading this process's vDSO from %s: %w", mem, err)
		}
		return b, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s lists no [vdso]", maps)
}

// useRunningVDSO reports whether a [vdso] mapping with build ID bid is
// named from the running kernel's vDSO: a recording made on this kernel
// then has its vDSO frames named (__vdso_clock_gettime) without perf's
// build-ID cache.
func (s *Symbolizer) useRunningVDSO(bid string) bool {
	return !s.cfg.IgnoreRunningVDSO && bid != "" && runningVDSO().buildID == bid
}

// openRunningVDSO opens the running kernel's vDSO for lookups.
func openRunningVDSO() (*loaded, error) {
	f, err := elfsym.OpenImage("[vdso]", runningVDSO().image)
	if err != nil {
		return nil, err
	}
	f.UseSymbolTableNames(true)
	return &loaded{obj: f, source: runningVDSOSource}, nil
}

// runningVDSOSource is how a report says where a vDSO's names came from.
const runningVDSOSource = "the running kernel's vDSO (same build ID)"
