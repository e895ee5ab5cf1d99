package elfsym

import (
	"encoding/binary"
	"errors"
	"path"
	"viewer/symbolize/dwarfbuf"
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
	bo            binary.ByteOrder // the object's, for the program's operands
}

func parseLineHeader(line, lineStr, str []byte, off int64, compDir string, bo binary.ByteOrder) (*lineHeader, error) {
	if bo == nil {
		bo = binary.LittleEndian
	}
	if off < 0 || off >= int64(len(line)) {
		return nil, errors.New("line program offset out of range")
	}
	b := &dwarfbuf.Reader{B: line[off:], Order: bo}
	length := uint64(b.U32())
	dwarf64 := false
	if length == 0xffffffff {
		dwarf64 = true
		length = b.U64()
	}
	if b.Err || length > uint64(b.Len()) {
		return nil, errors.New("line program truncated")
	}
	b.B = b.B[:b.Pos+int(length)]
	version := b.U16()
	if version < 2 || version > 5 {
		return nil, errors.New("unsupported line table version")
	}
	if version >= 5 {
		b.U8() // address_size
		b.U8() // segment_selector_size
	}
	var hl uint64
	if dwarf64 {
		hl = b.U64() // header_length
	} else {
		hl = uint64(b.U32())
	}
	if b.Err || hl > uint64(b.Len()) {
		return nil, errors.New("line program header truncated")
	}
	h := &lineHeader{version: version, program: b.B[b.Pos+int(hl):], bo: b.Order}
	b.B = b.B[:b.Pos+int(hl)]
	h.minInst = b.U8()
	if version >= 4 {
		b.U8() // maximum_operations_per_instruction
	}
	h.defaultIsStmt = b.U8() != 0
	h.lineBase = int8(b.U8())
	h.lineRange = b.U8()
	opBase := b.U8()
	h.opcodeBase = opBase
	for i := 1; i < int(opBase); i++ {
		h.stdLens = append(h.stdLens, b.U8())
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
			s := b.CStr()
			if s == "" || b.Err {
				break
			}
			dirs = append(dirs, s)
		}
		files := []string{""}
		for {
			name := b.CStr()
			if name == "" || b.Err {
				break
			}
			di := b.Uleb()
			b.Uleb() // mtime
			b.Uleb() // length
			dir := ""
			if di < uint64(len(dirs)) {
				dir = dirs[di]
			}
			files = append(files, withCompDir(join(dir, name)))
		}
		h.files = files
		return h, readErr(b)
	}
	// DWARF 5: entry formats, then entries, for directories then files.
	readEntries := func() ([][2]any, error) {
		nfmt := int(b.U8())
		type fmtPair struct{ typ, form uint64 }
		fmts := make([]fmtPair, nfmt)
		for i := range fmts {
			fmts[i] = fmtPair{b.Uleb(), b.Uleb()}
		}
		n := b.Uleb()
		if n > 1<<20 {
			return nil, errors.New("implausible file table")
		}
		out := make([][2]any, n)
		for i := range out {
			for _, f := range fmts {
				v, err := lineForm(b, f.form, dwarf64, lineStr, str)
				if err != nil {
					return nil, err
				}
				switch f.typ {
				case 1: // DW_LNCT_path
					out[i][0] = v
				case 2: // DW_LNCT_directory_index
					out[i][1] = v
				}
			}
			if b.Err {
				return nil, readErr(b)
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

// errShort is the error of a read past the end of a DWARF structure.
var errShort = errors.New("line table header truncated")

// readErr is the error a dwarfbuf cursor's reads ended in, if any.
func readErr(r *dwarfbuf.Reader) error {
	if r.Err {
		return errShort
	}
	return nil
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

// lineForm reads one attribute value of a line-table entry: strings as
// string, constants as uint64, 16-byte data and blocks skipped (nil).
func lineForm(r *dwarfbuf.Reader, form uint64, dwarf64 bool, lineStr, str []byte) (any, error) {
	enc := dwarfbuf.Encoding{Version: 5, Dwarf64: dwarf64}
	switch form {
	case dwarfbuf.FormString:
		return r.CStr(), nil
	case dwarfbuf.FormLineStrp:
		return strAt(lineStr, r.Uint(enc.OffsetSize())), nil
	case dwarfbuf.FormStrp:
		return strAt(str, r.Uint(enc.OffsetSize())), nil
	case dwarfbuf.FormData1, dwarfbuf.FormData2, dwarfbuf.FormData4, dwarfbuf.FormData8, dwarfbuf.FormUdata:
		v, _ := r.FormUint(uint32(form), 0, enc)
		return v, nil
	case dwarfbuf.FormData16, dwarfbuf.FormBlock:
		r.SkipForm(uint32(form), enc)
		return nil, nil
	}
	// strx forms would need the unit's str_offsets_base; no producer
	// uses them here. Give up on this table: callers fall back.
	return nil, errors.New("unsupported form in line table header")
}
