package annotate

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
)

const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"

// objdumpRange runs objdump -d on [lo, hi) of path: address → text.
func objdumpRange(t *testing.T, path string, lo, hi uint64) ([]uint64, map[uint64]string) {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", "--start-address", fmt.Sprintf("%#x", lo),
		"--stop-address", fmt.Sprintf("%#x", hi), path).Output()
	if err != nil {
		t.Fatalf("objdump (binutils, run make deps): %v", err)
	}
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
	var addrs []uint64
	texts := map[uint64]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			text := m[2]
			if i := strings.Index(text, "#"); i >= 0 {
				text = text[:i]
			}
			addrs = append(addrs, a)
			texts[a] = text
		}
	}
	return addrs, texts
}

// TestLibcAgainstObjdump lists hot glibc functions (AVX2 string code, a
// malloc path with calls and jumps) with libc6-dbg's DWARF and compares
// every instruction's address and text with objdump -d of the same range,
// and each branch target's label with the listing's own symbol table.
func TestLibcAgainstObjdump(t *testing.T) {
	ef, err := elfsym.Open(libc)
	if err != nil {
		t.Fatalf("%s: %v", libc, err)
	}
	id := ef.BuildID()
	ef.Close()
	dbg := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(dbg); err != nil {
		t.Fatalf("libc6-dbg is required (run make deps): %v", err)
	}
	df, err := elfsym.Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	syms := Symbols(df.Symbols())
	b, err := datatype.Open(libc, dbg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"__strlen_avx2", "__memmove_avx_unaligned_erms", "_int_malloc", "qsort_r"} {
		sym, ok := syms.Named(name)
		if !ok {
			t.Errorf("no symbol %s in %s", name, dbg)
			continue
		}
		fn := syms.Range(sym)
		l, err := Build(b, df, syms, fn, []datatype.Sample{{PC: fn.Lo, Weight: 3}})
		if err != nil {
			t.Fatal(err)
		}
		addrs, texts := objdumpRange(t, libc, fn.Lo, fn.Hi)
		if len(l.Rows) != len(addrs) {
			t.Errorf("%s: %d instructions, objdump lists %d", name, len(l.Rows), len(addrs))
		}
		bad := 0
		for i, r := range l.Rows {
			if i >= len(addrs) {
				break
			}
			got, want := datatype.NormalizeAsm(r.Text), datatype.NormalizeAsm(texts[addrs[i]])
			if r.PC != addrs[i] || got != want {
				if bad++; bad <= 10 {
					t.Errorf("%s: %#x %q, objdump %#x %q", name, r.PC, got, addrs[i], want)
				}
			}
		}
		if l.Total != 3 || l.Rows[0].Self != 3 {
			t.Errorf("%s: total %d, first row %d; want the one sample of 3 on the entry", name, l.Total, l.Rows[0].Self)
		}
		if len(l.Rows[0].Frames) == 0 || l.Rows[0].Frames[0].Line == 0 {
			t.Errorf("%s: the entry has no source line: %+v", name, l.Rows[0].Frames)
		}
	}
}
