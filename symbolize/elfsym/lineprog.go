package elfsym

import (
	"debug/elf"
	"errors"
	"slices"
	"viewer/symbolize/dwarfbuf"
)

// lineTable runs a unit's line program into rows sorted by address: each
// sequence in address order ending with an end row; sequences at address 0
// (code the linker dropped) are left out.
func (l *fastLiner) lineTable(u *funit) ([]lineRow, []string, error) {
	off := u.stmt
	head, err := l.line.ready(min(int64(len(l.line.data)), off+12))
	if err != nil {
		return nil, nil, err
	}
	if off+4 > int64(len(head)) {
		return nil, nil, errors.New(".debug_line: offset out of range")
	}
	r := &dwarfbuf.Reader{B: head[off:], Order: l.bo}
	n := int64(r.U32()) + 4
	if n == 0xffffffff+4 {
		n = int64(r.U64()) + 12
	}
	line, err := l.line.ready(off + n)
	if err != nil {
		return nil, nil, err
	}
	lineStr, _ := l.lineStr.all()
	str, _ := l.str.all()
	h, err := parseLineHeader(line, lineStr, str, off, u.compDir, l.bo)
	if err != nil {
		return nil, nil, err
	}
	rows, err := runLineProgram(h, u.AddrSize, l.f.kind == elf.ET_REL)
	return rows, h.files, err
}

func runLineProgram(h *lineHeader, addrSize uint8, keepZero bool) ([]lineRow, error) {
	r := &dwarfbuf.Reader{B: h.program, Order: h.bo}
	type seq struct{ start, end int }
	var seqs []seq
	rows := make([]lineRow, 0, len(h.program)/3)
	var addr uint64
	file, line, disc := uint64(1), int64(1), uint64(0)
	start := 0
	reset := func() { addr, file, line, disc = 0, 1, 1, 0 }
	emit := func() {
		f := uint32(file) & 0xffffff
		if disc > 0 && disc < 256 {
			f |= uint32(disc) << 24
		}
		rows = append(rows, lineRow{addr: addr, file: f, line: uint32(line)})
		disc = 0
	}
	minInst := uint64(h.minInst)
	for r.Len() > 0 && !r.Err {
		op := r.U8()
		if op >= h.opcodeBase {
			adj := uint64(op - h.opcodeBase)
			addr += adj / uint64(h.lineRange) * minInst
			line += int64(h.lineBase) + int64(adj%uint64(h.lineRange))
			emit()
			continue
		}
		switch op {
		case 0: // extended
			n := r.Uleb()
			if n == 0 || n > uint64(r.Len()) {
				return rows, errors.New(".debug_line: bad extended opcode")
			}
			body := r.Bytes(n)
			switch body[0] {
			case 1: // end_sequence
				rows = append(rows, lineRow{addr: addr, file: endRow})
				if rows[start].addr != 0 || keepZero {
					seqs = append(seqs, seq{start, len(rows)})
				}
				start = len(rows)
				reset()
			case 2: // set_address
				b := body[1:]
				switch len(b) {
				case 8:
					addr = h.bo.Uint64(b)
				case 4:
					addr = uint64(h.bo.Uint32(b))
				default:
					return rows, errors.New(".debug_line: bad set_address")
				}
			case 4: // set_discriminator
				rr := dwarfbuf.Reader{B: body[1:]}
				disc = rr.Uleb()
			}
		case 1: // copy
			emit()
		case 2: // advance_pc
			addr += r.Uleb() * minInst
		case 3: // advance_line
			line += r.Sleb()
		case 4: // set_file
			file = r.Uleb()
		case 5: // set_column
			r.Uleb()
		case 6, 7, 10, 11: // negate_stmt basic_block prologue_end epilogue_begin
		case 8: // const_add_pc
			addr += uint64((255-h.opcodeBase)/h.lineRange) * minInst
		case 9: // fixed_advance_pc
			addr += uint64(r.U16())
		case 12: // set_isa
			r.Uleb()
		default:
			if int(op)-1 < len(h.stdLens) {
				for range h.stdLens[op-1] {
					r.Uleb()
				}
			}
		}
	}
	if r.Err {
		return rows, readErr(r)
	}
	slices.SortStableFunc(seqs, func(a, b seq) int {
		x, y := rows[a.start].addr, rows[b.start].addr
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	inOrder := len(seqs) > 0 && seqs[0].start == 0 && seqs[len(seqs)-1].end == len(rows)
	for i := 1; inOrder && i < len(seqs); i++ {
		inOrder = seqs[i].start == seqs[i-1].end
	}
	if inOrder {
		return rows, nil
	}
	out := make([]lineRow, 0, len(rows))
	for _, s := range seqs {
		out = append(out, rows[s.start:s.end]...)
	}
	return out, nil
}
