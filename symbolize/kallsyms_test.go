package symbolize

import (
	"os"
	"path/filepath"
	"testing"

	"viewer/symbolize/elfsym"
)

// TestKallsymsPaddingNamesItsFunction: system-fp's one sample that differed
// from perf script was an interrupt at native_set_pte's first instruction;
// CallSites moves a caller frame one byte back, onto the last byte of the
// __pfx_native_set_pte padding before it, which no call ends in. That byte
// is named by the function, as perf names the pc; any other padding byte,
// and the other symbols, by their own names.
func TestKallsymsPaddingNamesItsFunction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(path, []byte(`ffffffff81001000 T do_thing
ffffffff81001ff0 T __pfx_native_set_pte
ffffffff81002000 T native_set_pte
ffffffff81002000 t native_set_pte_alias
ffffffff81002040 T __pfx_next_fn
ffffffff81002050 T next_fn
ffffffff81003000 T end_marker
`), 0o644)
	k, err := loadKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81001fff, "native_set_pte_alias"}, // the padding's last byte: the function (its last alias, as perf)
		{0xffffffff81001ff5, "__pfx_native_set_pte"}, // inside the padding
		{0xffffffff81002000, "native_set_pte_alias"},
		{0xffffffff81002010, "native_set_pte_alias"},
		{0xffffffff8100204f, "next_fn"},
		{0xffffffff81001fef, "do_thing"},
	} {
		got, _ := k.Lookup(c.addr, []elfsym.Frame{})
		if len(got) != 1 || got[0].Name != c.want {
			t.Errorf("%#x: %v, want %s", c.addr, got, c.want)
		}
	}
}
