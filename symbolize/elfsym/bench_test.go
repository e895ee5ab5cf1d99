package elfsym

import "testing"

// BenchmarkColdLibc opens libc's debug file and looks up 20,000 addresses
// inside its functions, decoding every unit they touch with the fast DWARF
// decoder (its DIE, abbreviation, range and line-table cursor): the cost
// of a binary's first profile. go test -run '^$' -bench ColdLibc ./symbolize/elfsym
func BenchmarkColdLibc(b *testing.B) {
	path := libcDebug(b)
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	addrs := libcAddrs(b, f, 20000, 3)
	f.Close()
	b.ResetTimer()
	for range b.N {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var frames []Frame
		for _, a := range addrs {
			frames, _ = f.Lookup(a, frames[:0])
		}
		f.Close()
	}
}
