package debuginfo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/store"
	"viewer/web/store/storetest"
)

// sameBuildID builds n programs with DWARF that differ in their bytes
// but all carry build ID bid.
func sameBuildID(t *testing.T, bid string, n int) []string {
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	dir := t.TempDir()
	var out []string
	for i := range n {
		src := filepath.Join(dir, fmt.Sprintf("p%d.c", i))
		os.WriteFile(src, []byte(fmt.Sprintf("int work%d(int n) { return n * %d; }\nint main(int c, char **v) { return work%d(c); }\n", i, i+3, i)), 0o644)
		bin := strings.TrimSuffix(src, ".c")
		if b, err := exec.Command(gcc, "-g", "-Wl,--build-id=0x"+bid, "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		out = append(out, bin)
	}
	return out
}

// TestFirstFileWinsConcurrently: uploads of different files for one build
// ID at once, on a directory and on an S3 bucket, store exactly one; the
// others get a ConflictError naming its digest, and no file of theirs is
// left in the store.
func TestFirstFileWinsConcurrently(t *testing.T) {
	const bid = "00112233445566778899aabbccddeeff00112233"
	files := sameBuildID(t, bid, 4)
	for _, backend := range []string{"dir", "s3"} {
		t.Run(backend, func(t *testing.T) {
			var st store.Store
			if backend == "dir" {
				d, err := store.NewDir(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				st = d
			} else {
				st = storetest.NewS3(t).Open(t)
			}
			s := New(Config{Store: st, TempDir: t.TempDir()})
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make([]error, len(files))
			for i, p := range files {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, err := os.Open(p)
					if err != nil {
						errs[i] = err
						return
					}
					defer f.Close()
					_, errs[i] = s.Put(ctx, f, p, bid, "debuginfo", false)
				}()
			}
			wg.Wait()
			won := -1
			for i, err := range errs {
				var ce *ConflictError
				switch {
				case err == nil && won < 0:
					won = i
				case err == nil:
					t.Errorf("uploads %d and %d both stored", won, i)
				case !errors.As(err, &ce):
					t.Errorf("upload %d: %v, want a conflict", i, err)
				}
			}
			if won < 0 {
				t.Fatal("no upload was stored")
			}
			e, err := s.entry(ctx, bid, "debuginfo")
			if err != nil {
				t.Fatal(err)
			}
			keys, _ := st.(store.Lister).List(ctx, prefix)
			var elfs []string
			for _, k := range keys {
				if strings.Contains(k, "/elf-") {
					elfs = append(elfs, k)
				}
			}
			if len(elfs) != 1 || elfs[0] != e.Object {
				t.Errorf("the store holds %v, want only the kept %s", elfs, e.Object)
			}
		})
	}
}
