package web_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web/webtest"
)

// storedSection is section name of the ELF file at p as stored in the file
// (compressed when it is).
func storedSection(t *testing.T, p, name string) (raw []byte, compressed bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	s := ef.Section(name)
	if s == nil {
		t.Fatalf("%s has no %s", p, name)
	}
	raw = make([]byte, s.FileSize)
	if _, err := f.ReadAt(raw, int64(s.Offset)); err != nil {
		t.Fatal(err)
	}
	return raw, s.Flags&elf.SHF_COMPRESSED != 0
}

func getBody(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestSectionAsElfutilsServesIt: /buildid/ID/section/NAME of a file whose
// DWARF is zstd-compressed answers what Debian's debuginfod answers for the
// same file, byte for byte: the section as stored.
func TestSectionAsElfutilsServesIt(t *testing.T) {
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	objcopy := debuginfodtest.NeedTool(t, "objcopy", "binutils")
	dir := t.TempDir()
	src := filepath.Join(dir, "z.c")
	os.WriteFile(src, []byte(webtest.HelloC), 0o644)
	exe := filepath.Join(dir, "z")
	if out, err := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if out, err := exec.Command(objcopy, "--compress-debug-sections=zstd", exe).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	raw, compressed := storedSection(t, exe, ".debug_info")
	if !compressed {
		t.Fatalf("objcopy --compress-debug-sections=zstd left .debug_info uncompressed")
	}
	real := debuginfodtest.Start(t, dir)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", exe, ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	for _, name := range []string{".debug_info", ".debug_line", ".text"} {
		rc, rb := getBody(t, real.URL+"/buildid/"+bid+"/section/"+name)
		vc, vb := getBody(t, ds.URL+"/buildid/"+bid+"/section/"+name)
		if rc != vc || string(rb) != string(vb) {
			t.Errorf("section %s: debuginfod answers %d with %d bytes, viewer %d with %d", name, rc, len(rb), vc, len(vb))
		}
		if name == ".debug_info" {
			t.Logf("debuginfod: %d, %d bytes; stored %d bytes; equal to stored: %v", rc, len(rb), len(raw), string(rb) == string(raw))
		}
	}
}

// sectionBomb is a small ELF file with DWARF whose .debug_bomb section says
// it is zstd-compressed (SHF_COMPRESSED) and decompresses to 1 GiB of
// zeros. It returns the path, the build ID and the section's stored size.
func sectionBomb(t *testing.T) (path, bid string, stored int64) {
	t.Helper()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	objcopy := debuginfodtest.NeedTool(t, "objcopy", "binutils")
	dir := t.TempDir()
	src := filepath.Join(dir, "b.c")
	os.WriteFile(src, []byte(webtest.HelloC), 0o644)
	plain := filepath.Join(dir, "plain")
	if out, err := exec.Command(gcc, "-g", "-O0", "-Wl,--build-id", "-o", plain, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	// Elf64_Chdr (ELFCOMPRESS_ZSTD, 1 GiB, alignment 1), then the frame.
	var payload bytes.Buffer
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], uint32(elf.COMPRESS_ZSTD))
	binary.LittleEndian.PutUint64(hdr[8:], 1<<30)
	binary.LittleEndian.PutUint64(hdr[16:], 1)
	payload.Write(hdr)
	// A zstd frame (RFC 8878) of 8,192 RLE blocks of 128 KiB zeros: 32 KB.
	payload.Write([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}) // magic; single segment, 8-byte content size
	binary.Write(&payload, binary.LittleEndian, uint64(1<<30))
	const block = 128 << 10
	for i := 0; i < (1<<30)/block; i++ {
		h := uint32(1)<<1 | block<<3 // RLE
		if i == (1<<30)/block-1 {
			h |= 1 // last block
		}
		payload.Write([]byte{byte(h), byte(h >> 8), byte(h >> 16), 0})
	}
	pf := filepath.Join(dir, "payload")
	os.WriteFile(pf, payload.Bytes(), 0o644)
	path = filepath.Join(dir, "bomb")
	if out, err := exec.Command(objcopy, "--add-section", ".debug_bomb="+pf, plain, path).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	// Mark it compressed: sh_flags of its section header.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var ehdr elf.Header64
	if err := binary.Read(io.NewSectionReader(f, 0, 64), binary.LittleEndian, &ehdr); err != nil {
		t.Fatal(err)
	}
	for i, s := range ef.Sections {
		if s.Name == ".debug_bomb" {
			off := int64(ehdr.Shoff) + int64(i)*int64(ehdr.Shentsize) + 8 // sh_flags
			var fl [8]byte
			binary.LittleEndian.PutUint64(fl[:], uint64(s.Flags|elf.SHF_COMPRESSED))
			if _, err := f.WriteAt(fl[:], off); err != nil {
				t.Fatal(err)
			}
			stored = int64(s.FileSize)
		}
	}
	bid, err = debuginfodtest.BuildID(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, bid, stored
}

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// TestSectionBombNotDecompressed is issue 33's attack: a 50 KB ELF file
// with a section claiming 1 GiB zstd-compressed, asked by 3 clients at once
// for its last byte (Range: bytes=1073741823-). viewer sends the section as
// stored, as elfutils does, so no client makes it decompress anything: the
// section's size is its stored size, and the 3 requests take a small CPU
// time (decompressing 1 GiB took seconds each).
func TestSectionBombNotDecompressed(t *testing.T) {
	path, bid, stored := sectionBomb(t)
	fi, _ := os.Stat(path)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{})
	if code, body := putFile(t, ds.URL, bid, "debuginfo", path, ""); code != 201 {
		t.Fatalf("upload: %d %s", code, body)
	}
	before := cpuSeconds()
	honest := honestClient(t, ds.URL)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, ds.URL+"/buildid/"+bid+"/section/.debug_bomb", nil)
			req.Header.Set("Range", "bytes=1073741823-")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if size := resp.Header.Get("X-Debuginfod-Size"); size != strconv.FormatInt(stored, 10) {
				t.Errorf("%s, %d bytes, X-Debuginfod-Size %s: want the stored %d bytes", resp.Status, n, size, stored)
			}
		})
	}
	wg.Wait()
	cpu := cpuSeconds() - before
	honest()
	t.Logf("a %d-byte ELF, section stored in %d bytes: 3 clients took %.2f CPU s", fi.Size(), stored, cpu)
	if cpu > 1 {
		t.Errorf("3 requests for the last byte took %.2f CPU seconds: the section was decompressed", cpu)
	}
	// The whole section is the stored bytes.
	raw, _ := storedSection(t, path, ".debug_bomb")
	if code, b := getBody(t, ds.URL+"/buildid/"+bid+"/section/.debug_bomb"); code != 200 || !bytes.Equal(b, raw) {
		t.Errorf("the section: %d, %d bytes, want the %d stored bytes", code, len(b), len(raw))
	}
}
