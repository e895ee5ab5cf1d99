// Package elfsym turns addresses inside one ELF object into functions, source
// lines and inlined frames, from DWARF when the object has it and from its
// symbol tables otherwise. It loads DWARF lazily, one compile unit at a time,
// so that one address in a large library parses only the unit that holds it.
package elfsym

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"viewer/symbolize/localfile"
)

// Frame is one source-level frame at an address. A lookup returns them
// innermost first: the first frame is the inlined callee whose code is at the
// address, the last one the function that holds it out of line.
type Frame struct {
	// Name is the function's name as the object spells it: the linkage
	// (mangled) name when there is one, else the plain name.
	Name      string
	File      string // source file, "" when unknown
	Line      int    // 0 when unknown
	StartLine int    // the function's declaration line, 0 when unknown
	// FuncFile is the file that declares the function (DW_AT_decl_file),
	// "" when unknown; File is where the code at the address comes from.
	FuncFile string
	// Discriminator tells apart blocks on one line (addr2line prints it).
	Discriminator int
}

// File is one opened ELF object. Lookups are safe for concurrent use; the
// object's DWARF is parsed lazily and kept until Close.
type File struct {
	path    string
	f       *os.File
	r       io.ReaderAt // f, each read under localfile's deadline
	elf     *elf.File
	buildID string
	kind    elf.Type
	progs   []elf.ProgHeader // PT_LOAD segments
	link    string           // .gnu_debuglink name, "" if none
	hasText bool             // .text holds code (not NOBITS as in separate debug files)

	dwarfOnce sync.Once
	dw        liner
	dwErr     error

	symOnce sync.Once
	sym     *symtabLiner
	plt     atomic.Pointer[[]sym] // PLT stubs named from the executable (UsePLTOf)

	textOnce   sync.Once
	text       uint64 // link-time address of _text (KernelText)
	hasTextSym bool

	size atomic.Int64 // bytes held by decoded tables

	fileSize uint64 // the object's length in bytes; no section reaches past it

	symNames bool // name the outermost frame from the symbol table

	debugDWARF bool // decode with debug/dwarf, not fastLiner (tests compare the two)
}

// UseSymbolTableNames makes lookups name the outermost (not inlined) frame
// from the symbol table when a symbol covers the address, as llvm-symbolizer
// does: glibc's DWARF, for one, calls functions by internal aliases such as
// __GI__exit where the symbol table has the public _Exit. addr2line keeps the
// DWARF name. Call it before the first lookup.
func (f *File) UseSymbolTableNames(on bool) { f.symNames = on }

// ErrNoBuildID is returned by BuildID when the object has no GNU build-ID note.
var ErrNoBuildID = errors.New("elfsym: no build-ID note")

// Open opens the ELF object at path and reads its headers, build ID and
// .gnu_debuglink. It does not read debug info yet. path is opened as a
// file under a directory the operator gave (localfile.Configured); use
// OpenContext for a path a profile names.
func Open(path string) (*File, error) {
	return OpenContext(context.Background(), path, localfile.Configured)
}

// OpenContext is Open for a path trusted as trust says, opened before ctx
// ends: only a regular file outside /proc, /sys and /dev (localfile.Open).
func OpenContext(ctx context.Context, path string, trust localfile.Trust) (_ *File, err error) {
	defer recoverInto(&err, path)
	lf, err := localfile.OpenELF(ctx, path, trust)
	if err != nil {
		return nil, err
	}
	return newFile(path, lf.OS, lf.R, lf.File), nil
}

// OpenImage opens an ELF object held in memory, such as the vDSO image the
// kernel maps into every process; name is what errors call it.
func OpenImage(name string, image []byte) (_ *File, err error) {
	defer recoverInto(&err, name)
	r := bytes.NewReader(image)
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%s: not an ELF object: %w", name, err)
	}
	f := newFile(name, nil, r, ef)
	f.size.Add(int64(len(image)))
	return f, nil
}

// newFile reads what Open reads of an object: its loadable segments, build
// ID, .gnu_debuglink and whether it holds code.
func newFile(path string, f *os.File, r io.ReaderAt, ef *elf.File) *File {
	ff := &File{path: path, f: f, r: r, elf: ef, kind: ef.Type, fileSize: objectSize(f, r)}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			ff.progs = append(ff.progs, p.ProgHeader)
		}
	}
	ff.progs = estimateOffsets(ff.progs)
	ff.buildID = BuildIDNote(ef)
	if s := ef.Section(".gnu_debuglink"); s != nil {
		if d, err := s.Data(); err == nil {
			if i := bytes.IndexByte(d, 0); i > 0 {
				ff.link = string(d[:i])
			}
		}
	}
	if s := ef.Section(".text"); s != nil && s.Type != elf.SHT_NOBITS {
		ff.hasText = true
	}
	return ff
}

// objectSize is the length of the object f (or, held in memory, r): a
// damaged or hostile section header may claim gigabytes the file does not
// have, and reading a section allocates its claimed size first.
func objectSize(f *os.File, r io.ReaderAt) uint64 {
	if f != nil {
		if st, err := f.Stat(); err == nil && st.Size() >= 0 {
			return uint64(st.Size())
		}
	}
	if s, ok := r.(interface{ Size() int64 }); ok && s.Size() >= 0 {
		return uint64(s.Size())
	}
	return math.MaxUint64
}

// checkSection refuses a section whose bytes reach past the end of the
// object, before anything of its claimed size is allocated.
func (f *File) checkSection(s *elf.Section) error {
	if s.Offset > f.fileSize || s.FileSize > f.fileSize-s.Offset {
		return fmt.Errorf("section %s of %d bytes at offset %d reaches past the end of the file (%d bytes): the file is damaged or truncated", s.Name, s.FileSize, s.Offset, f.fileSize)
	}
	return nil
}

// estimateOffsets fills in the file offsets of the loadable segments of a
// separate debug file, which objcopy --only-keep-debug zeroes, on the usual
// layout where a segment's offset is its address less the first segment's
// page. UseLoadSegmentsOf replaces the guess when the executable is at hand.
func estimateOffsets(progs []elf.ProgHeader) []elf.ProgHeader {
	if len(progs) == 0 {
		return progs
	}
	base := progs[0].Vaddr &^ 0xfff
	out := make([]elf.ProgHeader, len(progs))
	for i, p := range progs {
		if p.Off == 0 && p.Filesz == 0 && p.Memsz > 0 && p.Vaddr >= base {
			p.Off = p.Vaddr - base
			p.Filesz = p.Memsz
		}
		out[i] = p
	}
	return out
}

// UseLoadSegmentsOf makes address translation use the program headers of exe,
// the executable or library a separate debug file belongs to.
func (f *File) UseLoadSegmentsOf(exe *File) {
	if len(exe.progs) > 0 {
		f.progs = exe.progs
	}
}

// BuildIDNote returns the lowercase hex GNU build ID from the object's note
// sections or, for files without section headers, its PT_NOTE segments; ""
// when it has none. It is the one build-ID reader the project uses.
func BuildIDNote(ef *elf.File) string {
	try := func(r io.ReaderAt, size uint64) string {
		d := make([]byte, size)
		if _, err := r.ReadAt(d, 0); err != nil && err != io.EOF {
			return ""
		}
		return parseBuildIDNote(d, ef.ByteOrder)
	}
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_NOTE && s.Size < 1<<16 {
			if id := try(s, s.Size); id != "" {
				return id
			}
		}
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_NOTE && p.Filesz < 1<<16 {
			if id := try(p, p.Filesz); id != "" {
				return id
			}
		}
	}
	return ""
}

// parseBuildIDNote finds an NT_GNU_BUILD_ID note in a run of ELF notes.
func parseBuildIDNote(d []byte, bo binary.ByteOrder) string {
	for len(d) >= 12 {
		nameSz := int(bo.Uint32(d))
		descSz := int(bo.Uint32(d[4:]))
		typ := bo.Uint32(d[8:])
		d = d[12:]
		nameEnd := (nameSz + 3) &^ 3
		descEnd := (descSz + 3) &^ 3
		if nameEnd > len(d) || nameEnd+descSz > len(d) {
			return ""
		}
		name := d[:nameSz]
		desc := d[nameEnd : nameEnd+descSz]
		if typ == 3 && string(bytes.TrimRight(name, "\x00")) == "GNU" && descSz > 0 {
			return hex.EncodeToString(desc)
		}
		if nameEnd+descEnd > len(d) {
			return ""
		}
		d = d[nameEnd+descEnd:]
	}
	return ""
}

// ParseBuildIDNotes finds the GNU build ID in raw ELF notes, such as the
// contents of /sys/kernel/notes. It returns "" when there is none.
func ParseBuildIDNotes(d []byte) string { return parseBuildIDNote(d, binary.LittleEndian) }

// Path is the file this object was opened from.
func (f *File) Path() string { return f.path }

// BuildID is the lowercase hex GNU build ID, or "" when the object has none.
func (f *File) BuildID() string { return f.buildID }

// DebugLink is the file name in .gnu_debuglink, or "".
func (f *File) DebugLink() string { return f.link }

// Type is the ELF type: ET_EXEC, ET_DYN (PIE and shared libraries), ...
func (f *File) Type() elf.Type { return f.kind }

// HasDWARF reports whether the object carries DWARF line information.
func (f *File) HasDWARF() bool {
	return f.elf.Section(".debug_info") != nil || f.elf.Section(".zdebug_info") != nil
}

// HasSymbols reports whether the object has a symbol table (.symtab or .dynsym).
func (f *File) HasSymbols() bool {
	return f.elf.Section(".symtab") != nil || f.elf.Section(".dynsym") != nil
}

// Size estimates the bytes of memory the object's decoded debug info holds.
func (f *File) Size() int64 { return f.size.Load() + 4096 }

// Close releases the file. Lookups must not be running.
func (f *File) Close() error {
	f.dw = nil
	f.sym = nil
	if f.f == nil {
		return nil // OpenImage's
	}
	return f.f.Close()
}

// ObjAddr translates a runtime address inside a mapping that maps this
// object's file from fileOffset at [start, limit) into the address the
// object's symbols and DWARF use. It matches the mapping's file offset
// against the PT_LOAD program headers, which is right for PIE and non-PIE
// executables, shared libraries and objects with several executable segments.
func (f *File) ObjAddr(addr, start, limit, fileOffset uint64) (uint64, error) {
	if addr < start || (limit > start && addr >= limit) {
		return 0, fmt.Errorf("address %#x outside mapping [%#x, %#x)", addr, start, limit)
	}
	off := addr - start + fileOffset
	if len(f.progs) == 0 {
		// Relocatable object or a file without program headers: use file offsets
		// against sections as-is.
		return addr - start + fileOffset, nil
	}
	// The segment whose file range holds the offset; prefer executable ones.
	var best *elf.ProgHeader
	for i := range f.progs {
		p := &f.progs[i]
		if off >= p.Off && off < p.Off+max(p.Filesz, p.Memsz) {
			if best == nil || (p.Flags&elf.PF_X != 0 && best.Flags&elf.PF_X == 0) {
				best = p
			}
		}
	}
	if best == nil {
		// Non-PIE executables are sometimes described with offset 0 and their
		// link-time start address: then the address is already an object address.
		if f.kind == elf.ET_EXEC {
			for _, p := range f.progs {
				if addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
					return addr, nil
				}
			}
		}
		return 0, fmt.Errorf("file offset %#x of address %#x is in no loadable segment of %s", off, addr, f.path)
	}
	return off - best.Off + best.Vaddr, nil
}

// Lookup returns the frames at object address addr, innermost first, appended
// to frames[:0]. It returns no frames and no error when nothing is known.
// When the DWARF is unreadable it names the address from the symbol table
// and also returns the DWARF error (for the unit, or DWARFError's).
func (f *File) Lookup(addr uint64, frames []Frame) (_ []Frame, err error) {
	frames = frames[:0]
	defer recoverInto(&err, f.path)
	if name, ok := f.pltName(addr); ok && f.symNames {
		return append(frames, Frame{Name: name}), nil
	}
	dw, _ := f.dwarf()
	if dw == nil {
		return f.symtabFrames(addr, frames), nil
	}
	frames, named, err := dw.lookup(addr, frames)
	if err != nil {
		return f.symtabFrames(addr, frames[:0]), err
	}
	if named {
		return frames, nil
	}
	if len(frames) > 0 && frames[len(frames)-1].Name != "" && !f.symNames {
		return frames, nil
	}
	// Line info without a function DIE (assembly), or llvm-symbolizer's
	// naming: the symbol table names the outermost frame.
	return f.symtabFrames(addr, frames), nil
}

// symNameTable is the symbol table when the outermost frame is named from
// it (UseSymbolTableNames), else nil.
func (f *File) symNameTable() []sym {
	if !f.symNames {
		return nil
	}
	if st := f.symtab(); st != nil {
		return st.syms
	}
	return nil
}

// symtabFrames names the outermost frame (adding one if there is none) from
// the symbol table: the symbol covering addr in llvm-symbolizer's way, or
// GNU addr2line's way (the nearest symbol below, with the file of its
// STT_FILE entry) unless UseSymbolTableNames is on.
func (f *File) symtabFrames(addr uint64, frames []Frame) []Frame {
	st := f.symtab()
	if st == nil {
		return frames
	}
	var fr Frame
	if f.symNames {
		name, _, ok := st.lookup(addr)
		if !ok {
			return frames
		}
		fr.Name = name
	} else {
		s, ok := st.gnuLookup(addr)
		if !ok {
			return frames
		}
		fr.Name, fr.File = s.name, s.file
	}
	if len(frames) == 0 {
		return append(frames, fr)
	}
	frames[len(frames)-1].Name = fr.Name
	return frames
}

var errNoDWARF = errors.New("no DWARF")

// liner answers lookups from DWARF: fastLiner, or dwarfLiner (debug/dwarf)
// for files fastLiner does not handle.
type liner interface {
	// lookup appends the frames at pc; named reports that the outermost
	// frame already has its symbol-table name (UseSymbolTableNames).
	lookup(pc uint64, frames []Frame) (_ []Frame, named bool, err error)
	prefetch(addrs []uint64)
	// unit is the compile unit holding pc (ok false when none does).
	unit(pc uint64) (_ CompileUnit, ok bool, err error)
}

// CompileUnit is what one compile unit's DWARF says of its sources: its
// compilation directory and the files its line table names, spelled as
// lookups spell Frame.File.
type CompileUnit struct {
	Dir   string
	Files []string
}

// Unit returns the compile unit that holds the link-time address addr (as
// Lookup takes it), for callers that check a source path against the debug
// info (the source view). ok is false when no unit covers addr.
func (f *File) Unit(addr uint64) (cu CompileUnit, ok bool, err error) {
	defer recoverInto(&err, f.path)
	dw, err := f.dwarf()
	if dw == nil {
		return CompileUnit{}, false, err
	}
	return dw.unit(addr)
}

func (f *File) dwarf() (liner, error) {
	f.dwarfOnce.Do(func() {
		if !f.HasDWARF() {
			f.dwErr = errNoDWARF
			return
		}
		// fastLiner does not apply relocations: relocatable objects go to
		// debug/dwarf.
		if !f.debugDWARF && f.kind != elf.ET_REL {
			var fl *fastLiner
			var err error
			func() {
				defer recoverInto(&err, f.path)
				fl, err = newFastLiner(f)
			}()
			if err == nil {
				f.dw = fl
				return
			}
		}
		var dl *dwarfLiner
		func() {
			defer recoverInto(&f.dwErr, f.path)
			dl, f.dwErr = newDWARFLiner(f)
		}()
		if f.dwErr == nil {
			f.dw = dl
		}
	})
	return f.dw, f.dwErr
}

// DWARFError reports why the object's DWARF could not be used, or nil.
func (f *File) DWARFError() error {
	_, err := f.dwarf()
	if errors.Is(err, errNoDWARF) {
		return nil
	}
	return err
}

func (f *File) symtab() *symtabLiner {
	f.symOnce.Do(func() {
		var err error
		defer recoverInto(&err, f.path)
		f.sym = newSymtabLiner(f)
	})
	return f.sym
}

// recoverInto turns a panic (debug/dwarf and debug/elf panic on some corrupt
// input) into an error naming the file.
func recoverInto(err *error, path string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: corrupt debug info (%v)", path, r)
	}
}

// cleanName strips the "@@VERSION" suffix symbol versions add.
func cleanName(s string) string {
	if i := strings.IndexByte(s, '@'); i > 0 {
		return s[:i]
	}
	return s
}

// Prefetch decodes in parallel the debug info that lookups of addrs will
// need. Lookups work without it; it only makes a large batch faster.
func (f *File) Prefetch(addrs []uint64) {
	if dw, _ := f.dwarf(); dw != nil {
		func() {
			var err error
			defer recoverInto(&err, f.path)
			dw.prefetch(addrs)
		}()
	}
}

// HasCode reports whether the object holds its code, as executables and
// libraries do and separate debug files (whose .text is NOBITS) do not.
func (f *File) HasCode() bool { return f.hasText }

// ImageBase is the address the object's first byte is linked at: the
// virtual address of the loadable segment that starts at file offset 0
// (0 for shared libraries and PIEs, 0x400000 for a classic executable).
// Module-relative addresses, as the Firefox Profiler and samply send
// them, are offsets from it.
func (f *File) ImageBase() uint64 {
	base, ok := uint64(0), false
	for _, p := range f.progs {
		if p.Vaddr < p.Off {
			continue
		}
		if b := p.Vaddr - p.Off; !ok || b < base {
			base, ok = b, true
		}
	}
	return base
}
