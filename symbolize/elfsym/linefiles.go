package elfsym

import (
	"encoding/binary"
	"errors"
	"path"
)

// lineFiles reads the file table of the line program at off in .debug_line
// and returns each file's name as addr2line and llvm-symbolizer print it:
// compilation directory, include directory and file name joined as they are,
// without cleaning ("./posix/../sysdeps/unix/sysv/linux/_exit.c"). debug/dwarf
// cleans the joined path, which loses that spelling. Indexes match
// dwarf.LineReader.Files: from 1 before DWARF 5, from 0 since.
func lineFiles(line, lineStr, str []byte, off int64, compDir string, bo binary.ByteOrder) ([]string, error) {
	h, err := parseLineHeader(line, lineStr, str, off, compDir, bo)
	if err != nil {
		return nil, err
	}
	return h.files, nil
}

// lineHeader is a line program's header and its opcodes.
type lineHeader struct {
	version       uint16
	minInst       uint8
	defaultIsStmt bool
	lineBase      int8
	lineRange     uint8
	opcodeBase    uint8
	stdLens       []uint8
	files         []string
	program       []byte
}

func parseLineHeader(line, lineStr, str []byte, off int64, compDir string, bo binary.ByteOrder) (*lineHeader, error) {
	if off < 0 || off >= int64(len(line)) {
		return nil, errors.New("line program offset out of range")
	}
	b := &reader{d: line[off:], bo: bo}
	length := uint64(b.u32())
	dwarf64 := false
	if length == 0xffffffff {
		dwarf64 = true
		length = b.u64()
	}
	if length > uint64(len(b.d)) {
		return nil, errors.New("line program truncated")
	}
	b.d = b.d[:length]
	version := b.u16()
	if version < 2 || version > 5 {
		return nil, errors.New("unsupported line table version")
	}
	if version >= 5 {
		b.u8() // address_size
		b.u8() // segment_selector_size
	}
	var hl uint64
	if dwarf64 {
		hl = b.u64() // header_length
	} else {
		hl = uint64(b.u32())
	}
	if b.err != nil || hl > uint64(len(b.d)) {
		return nil, errors.New("line program header truncated")
	}
	h := &lineHeader{version: version, program: b.d[hl:]}
	b.d = b.d[:hl]
	h.minInst = b.u8()
	if version >= 4 {
		b.u8() // maximum_operations_per_instruction
	}
	h.defaultIsStmt = b.u8() != 0
	h.lineBase = int8(b.u8())
	h.lineRange = b.u8()
	opBase := b.u8()
	h.opcodeBase = opBase
	for i := 1; i < int(opBase); i++ {
		h.stdLens = append(h.stdLens, b.u8())
	}
	if h.lineRange == 0 {
		return nil, errors.New("line program has line_range 0")
	}
	join := func(dir, name string) string {
		if path.IsAbs(name) || dir == "" {
			return name
		}
		return dir + "/" + name
	}
	withCompDir := func(p string) string {
		if path.IsAbs(p) || compDir == "" {
			return p
		}
		return compDir + "/" + p
	}
	if version < 5 {
		dirs := []string{""} // 0: the compilation directory
		for {
			s := b.cstr()
			if s == "" || b.err != nil {
				break
			}
			dirs = append(dirs, s)
		}
		files := []string{""}
		for {
			name := b.cstr()
			if name == "" || b.err != nil {
				break
			}
			di := b.uleb()
			b.uleb() // mtime
			b.uleb() // length
			dir := ""
			if di < uint64(len(dirs)) {
				dir = dirs[di]
			}
			files = append(files, withCompDir(join(dir, name)))
		}
		h.files = files
		return h, b.err
	}
	// DWARF 5: entry formats, then entries, for directories then files.
	readEntries := func() ([][2]any, error) {
		nfmt := int(b.u8())
		type fmtPair struct{ typ, form uint64 }
		fmts := make([]fmtPair, nfmt)
		for i := range fmts {
			fmts[i] = fmtPair{b.uleb(), b.uleb()}
		}
		n := b.uleb()
		if n > 1<<20 {
			return nil, errors.New("implausible file table")
		}
		out := make([][2]any, n)
		for i := range out {
			for _, f := range fmts {
				v := b.form(f.form, dwarf64, lineStr, str)
				switch f.typ {
				case 1: // DW_LNCT_path
					out[i][0] = v
				case 2: // DW_LNCT_directory_index
					out[i][1] = v
				}
			}
			if b.err != nil {
				return nil, b.err
			}
		}
		return out, nil
	}
	dirEntries, err := readEntries()
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(dirEntries))
	for i, e := range dirEntries {
		dirs[i], _ = e[0].(string)
	}
	fileEntries, err := readEntries()
	if err != nil {
		return nil, err
	}
	files := make([]string, len(fileEntries))
	for i, e := range fileEntries {
		name, _ := e[0].(string)
		di, _ := e[1].(uint64)
		dir := ""
		if di < uint64(len(dirs)) {
			dir = dirs[di]
		}
		// As addr2line and llvm-symbolizer do, a relative result is put
		// under the unit's DW_AT_comp_dir, even when directory 0 already is it.
		files[i] = withCompDir(join(dir, name))
	}
	h.files = files
	return h, nil
}

// reader decodes DWARF primitives; errors stick.
type reader struct {
	d   []byte
	bo  binary.ByteOrder
	err error
}

var errShort = errors.New("line table header truncated")

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if len(r.d) < n {
		r.err = errShort
		r.d = nil
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	v := r.d[0]
	r.d = r.d[1:]
	return v
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := r.bo.Uint16(r.d)
	r.d = r.d[2:]
	return v
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := r.bo.Uint32(r.d)
	r.d = r.d[4:]
	return v
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := r.bo.Uint64(r.d)
	r.d = r.d[8:]
	return v
}

func (r *reader) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
		shift += 7
	}
}

func (r *reader) bo8(b []byte) uint64 { return r.order().Uint64(b) }
func (r *reader) bo4(b []byte) uint32 { return r.order().Uint32(b) }

func (r *reader) order() binary.ByteOrder {
	if r.bo == nil {
		return binary.LittleEndian
	}
	return r.bo
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) cstr() string {
	for i, c := range r.d {
		if c == 0 {
			s := string(r.d[:i])
			r.d = r.d[i+1:]
			return s
		}
	}
	if r.err == nil {
		r.err = errShort
	}
	r.d = nil
	return ""
}

func strAt(sec []byte, off uint64) string {
	if off >= uint64(len(sec)) {
		return ""
	}
	s := sec[off:]
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

// form reads one attribute value of a line-table entry: strings as string,
// constants as uint64, anything else skipped (nil).
func (r *reader) form(form uint64, dwarf64 bool, lineStr, str []byte) any {
	offset := func() uint64 {
		if dwarf64 {
			return r.u64()
		}
		return uint64(r.u32())
	}
	switch form {
	case 0x08: // string
		return r.cstr()
	case 0x1f: // line_strp
		return strAt(lineStr, offset())
	case 0x0e: // strp
		return strAt(str, offset())
	case 0x0b: // data1
		return uint64(r.u8())
	case 0x05: // data2
		return uint64(r.u16())
	case 0x06: // data4
		return uint64(r.u32())
	case 0x07: // data8
		return r.u64()
	case 0x0f: // udata
		return r.uleb()
	case 0x1e: // data16
		if r.need(16) {
			r.d = r.d[16:]
		}
	case 0x09: // block
		n := r.uleb()
		if n > uint64(len(r.d)) {
			r.err = errShort
			return nil
		}
		r.d = r.d[n:]
	default:
		// strx forms would need the unit's str_offsets_base; no producer
		// uses them here. Give up on this table: callers fall back.
		r.err = errors.New("unsupported form in line table header")
	}
	return nil
}
