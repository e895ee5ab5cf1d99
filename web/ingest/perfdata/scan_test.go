package perfdata

import (
	"bytes"
	"testing"
)

// TestScanConvertsAsRead converts every recording twice, from Read's
// decoded records and from Scan's index (each record decoded again in
// time order), and wants the same profile byte for byte. In the Scan, the
// bytes Convert says it will not read again, of the file and of the
// compressed records' decompressed Spool, are overwritten as soon as it
// says so (with tiny windows, so that it says so often): a record read
// after its bytes were given up would change the profile.
func TestScanConvertsAsRead(t *testing.T) {
	defer func(w uint64, n int) { evictWindow, evictRefs = w, n }(evictWindow, evictRefs)
	evictWindow, evictRefs = 512, 4
	for _, name := range append(recordings, "system") {
		t.Run(name, func(t *testing.T) {
			data := readFile(t, name+".data")
			rf, err := Read(data, Options{UserStacks: true})
			if err != nil {
				t.Fatal(err)
			}
			want := write(t, rf)

			cp := bytes.Clone(data)
			converting, evicted := false, 0
			sp := &memSpool{clearing: &converting} // the compressed records', decompressed
			sf, err := Scan(cp, Options{UserStacks: true, Evict: func(lo, hi int) {
				if converting {
					clear(cp[lo:hi])
					evicted += hi - lo
				}
			}, Spool: func() (Spool, error) { return sp, nil }})
			if err != nil {
				t.Fatal(err)
			}
			if sf.Records != nil {
				t.Errorf("Scan kept %d records", len(sf.Records))
			}
			if sf.NumRecords() != len(rf.Records) {
				t.Errorf("Scan indexed %d records, Read decoded %d", sf.NumRecords(), len(rf.Records))
			}
			converting = true
			if got := write(t, sf); !bytes.Equal(got, want) {
				t.Errorf("the profile converted from Scan differs from Read's (%d and %d bytes)", len(got), len(want))
			}
			if len(data) > 64<<10 && evicted == 0 {
				t.Errorf("Convert gave up none of the %d bytes", len(data))
			}
			if sp.Len() > 64<<10 && sp.evicted == 0 {
				t.Errorf("Convert gave up none of the %d decompressed bytes", sp.Len())
			}
			t.Logf("%d records, %d of %d bytes given up while converting, %d of %d decompressed", sf.NumRecords(), evicted, len(data), sp.evicted, sp.Len())
		})
	}
}

func write(t *testing.T, f *File) []byte {
	t.Helper()
	p, err := Convert(f, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
