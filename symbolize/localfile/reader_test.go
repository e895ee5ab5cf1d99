package localfile_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"viewer/symbolize/localfile"
	"viewer/testdata/poll"
)

// gate is a file whose reads block until it is opened, as on a hung
// network mount; it counts the reads blocked in it.
type gate struct {
	open          chan struct{}
	blocked, most atomic.Int64
	data          []byte
}

func newGate() *gate { return &gate{open: make(chan struct{}), data: []byte("\x7fELF and more")} }

func (g *gate) ReadAt(p []byte, off int64) (int, error) {
	n := g.blocked.Add(1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	<-g.open
	g.blocked.Add(-1)
	return bytes.NewReader(g.data).ReadAt(p, off)
}

// TestReaderDeadline checks a read stuck in a file frees its caller at the
// deadline with an error naming the file and the deadline, later reads of
// that file fail at once, no more reads than the bound are ever stuck, and
// once the bound is reached reads of other files fail at once, until the
// stuck reads return.
func TestReaderDeadline(t *testing.T) {
	const deadline = 200 * time.Millisecond
	slots := localfile.NewReadSlots(3)
	g := newGate()
	buf := make([]byte, 4)

	stuck := localfile.NewReader("/mnt/hung/libfoo.so", g, deadline, slots)
	start := time.Now()
	_, err := stuck.ReadAt(buf, 0)
	took := time.Since(start)
	if took < deadline || took > deadline+2*time.Second {
		t.Errorf("a stuck read returned after %v; want the %v deadline", took, deadline)
	}
	if !errors.Is(err, localfile.ErrReadTimeout) || !strings.Contains(err.Error(), "/mnt/hung/libfoo.so") || !strings.Contains(err.Error(), "200ms deadline") {
		t.Errorf("stuck read: %v; want ErrReadTimeout naming the file and the 200ms deadline", err)
	}
	start = time.Now()
	if _, err := stuck.ReadAt(buf, 0); !errors.Is(err, localfile.ErrReadTimeout) || !strings.Contains(err.Error(), "earlier read") || time.Since(start) > deadline/2 {
		t.Errorf("second read of the stuck file: %v after %v; want it refused at once", err, time.Since(start))
	}

	// Ten workers read ten other files of the hung mount at once: at most
	// the bound's 3 reads are ever in the kernel, each worker is free by
	// the deadline (or at once, refused).
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, errs[i] = localfile.NewReader("/mnt/hung/lib"+strconv.Itoa(i)+".so", g, deadline, slots).ReadAt(make([]byte, 4), 0)
			if d := time.Since(start); d > 2*deadline+2*time.Second {
				t.Errorf("worker %d was held %v", i, d)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, localfile.ErrReadTimeout) && !errors.Is(err, localfile.ErrTooManyStranded) {
			t.Errorf("worker %d: %v; want a timeout or a refusal", i, err)
		}
	}
	if m := g.most.Load(); m > 3 {
		t.Errorf("%d reads were stuck at once; the bound is 3", m)
	}
	if n := slots.Stranded(); n != 3 {
		t.Errorf("%d reads stranded; want the bound's 3", n)
	}

	// The bound is reached: a healthy file fails at once, saying why.
	healthy := localfile.NewReader("/home/me/a.out", bytes.NewReader([]byte("\x7fELF")), deadline, slots)
	start = time.Now()
	_, err = healthy.ReadAt(buf, 0)
	if !errors.Is(err, localfile.ErrTooManyStranded) || !strings.Contains(err.Error(), "/home/me/a.out") || !strings.Contains(err.Error(), "3 reads of files are stuck") || time.Since(start) > deadline/2 {
		t.Errorf("read with the bound reached: %v after %v; want ErrTooManyStranded at once", err, time.Since(start))
	}

	// The mount comes back: the stranded reads return and free their slots.
	close(g.open)
	poll.Wait(5*time.Second, func() bool { return slots.Stranded() == 0 })
	if n := slots.Stranded(); n != 0 {
		t.Fatalf("%d reads still stranded after the file system came back", n)
	}
	for _, r := range []*localfile.Reader{healthy, stuck} {
		if n, err := r.ReadAt(buf, 0); err != nil || n != 4 || string(buf) != "\x7fELF" {
			t.Errorf("read after recovery: %d %q %v", n, buf, err)
		}
	}
}

// TestReaderChunks checks a read larger than one chunk returns all of the
// file, and io.EOF past its end, as os.File.ReadAt does.
func TestReaderChunks(t *testing.T) {
	data := make([]byte, 3<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	r := localfile.NewReader("big", bytes.NewReader(data), time.Second, localfile.NewReadSlots(2))
	got := make([]byte, len(data)+10)
	n, err := r.ReadAt(got, 0)
	if n != len(data) || err == nil || !bytes.Equal(got[:n], data) {
		t.Errorf("ReadAt: %d bytes, %v; want all %d then io.EOF", n, err, len(data))
	}
}

// uffdFile reads a real file into memory registered with userfaultfd, so
// pread(2) blocks in the kernel, holding its OS thread, until the fault is
// served or the userfaultfd closed: what a read of a hung NFS or FUSE file
// does, without a mount.
type uffdFile struct {
	f   *os.File
	mem []byte
}

func (u *uffdFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := u.f.ReadAt(u.mem[:len(p)], off)
	copy(p, u.mem[:n])
	return n, err
}

// newUffd returns memory of n pages whose first touch blocks, and a func
// that unblocks it; it skips the test where userfaultfd is not permitted.
func newUffd(t *testing.T, pages int) ([]byte, func()) {
	const (
		sysUserfaultfd  = 323 // amd64
		uffdAPI         = 0xAA
		uffdioAPI       = 0xc018aa3f
		uffdioRegister  = 0xc020aa00
		registerMissing = 1
	)
	if runtime.GOARCH != "amd64" {
		t.Skip("the userfaultfd syscall number here is amd64's")
	}
	fd, _, e := syscall.Syscall(sysUserfaultfd, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0, 0)
	if e != 0 {
		t.Skipf("userfaultfd: %v (needs root or vm.unprivileged_userfaultfd=1)", e)
	}
	api := struct{ api, features, ioctls uint64 }{api: uffdAPI}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); e != 0 {
		syscall.Close(int(fd))
		t.Skipf("UFFDIO_API: %v", e)
	}
	mem, err := syscall.Mmap(-1, 0, pages*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	reg := struct{ start, len, mode, ioctls uint64 }{uint64(uintptr(unsafe.Pointer(&mem[0]))), uint64(len(mem)), registerMissing, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioRegister, uintptr(unsafe.Pointer(&reg))); e != 0 {
		syscall.Close(int(fd))
		t.Skipf("UFFDIO_REGISTER: %v", e)
	}
	var once sync.Once
	release := func() { once.Do(func() { syscall.Close(int(fd)) }) }
	t.Cleanup(release)
	return mem, release
}

// threads is the process's OS thread count.
func threads(t *testing.T) int {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads: in /proc/self/status")
	return 0
}

// TestReaderBlockedInKernel reads a real ELF file with pread(2) stuck in
// the kernel: debug/elf's header read returns at the deadline with an error
// naming the file, 40 such workers hold at most the bound's OS threads in
// the kernel, and the file reads normally once the kernel lets go.
func TestReaderBlockedInKernel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, release := newUffd(t, 256)
	hung := &uffdFile{f: f, mem: mem}
	const deadline = 300 * time.Millisecond
	slots := localfile.NewReadSlots(4)

	start := time.Now()
	_, err = elf.NewFile(localfile.NewReader(exe, hung, deadline, slots))
	if d := time.Since(start); d < deadline || d > deadline+2*time.Second {
		t.Errorf("opening the ELF file returned after %v; want the %v deadline", d, deadline)
	}
	if !errors.Is(err, localfile.ErrReadTimeout) || !strings.Contains(err.Error(), exe) || !strings.Contains(err.Error(), "300ms deadline") {
		t.Errorf("elf.NewFile over a stuck read: %v; want ErrReadTimeout naming %s and the deadline", err, exe)
	}

	before := threads(t)
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker its own file, as different binaries of a profile.
			localfile.NewReader(exe, hung, deadline, slots).ReadAt(make([]byte, 64), 0)
		}()
	}
	wg.Wait()
	if n := slots.Stranded(); n != 4 {
		t.Errorf("%d reads stranded; want the bound's 4", n)
	}
	// Go keeps a few idle threads; the stuck ones are at most the bound.
	after := threads(t)
	t.Logf("OS threads: %d before the 40 workers, %d after", before, after)
	if after > before+4+4 {
		t.Errorf("%d OS threads after 40 workers read the hung file, %d before; want at most the bound of 4 more (and a few spare)", after, before)
	}

	release()
	poll.Wait(5*time.Second, func() bool { return slots.Stranded() == 0 })
	if n := slots.Stranded(); n != 0 {
		t.Fatalf("%d reads still stranded after the kernel let go", n)
	}
	ef, err := elf.NewFile(localfile.NewReader(exe, f, deadline, slots))
	if err != nil || ef.Section(".text") == nil {
		t.Errorf("reading %s after the kernel let go: %v", exe, err)
	}
}

// BenchmarkReadAt reads a file in the page cache 4 KiB and 128 KiB (the
// lazy section reader's buffer) at a time, straight and through a Reader,
// for what the deadline costs a read:
// go test -run '^$' -bench ReadAt ./symbolize/localfile
func BenchmarkReadAt(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	for _, size := range []int{4 << 10, 128 << 10} {
		for _, via := range []string{"os.File", "Reader"} {
			var r io.ReaderAt = f
			if via == "Reader" {
				r = localfile.NewReader(exe, f, 0, localfile.NewReadSlots(16))
			}
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, via), func(b *testing.B) {
				buf := make([]byte, size)
				b.SetBytes(int64(size))
				off := int64(0)
				for range b.N {
					if off+int64(size) > st.Size() {
						off = 0
					}
					if _, err := r.ReadAt(buf, off); err != nil {
						b.Fatal(err)
					}
					off += int64(size)
				}
			})
		}
	}
}
