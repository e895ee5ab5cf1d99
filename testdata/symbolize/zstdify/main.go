// Command zstdify compresses the .debug_* sections of an ELF64 file with zstd
// (SHF_COMPRESSED, ELFCOMPRESS_ZSTD), for tests: this machine's binutils
// cannot. Each compressed section is written over its old bytes, which it is
// smaller than, and the section header is updated.
//
//	go run ./testdata/symbolize/zstdify IN OUT
package main

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: zstdify IN OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "zstdify:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		return fmt.Errorf("%s: only little-endian ELF64 is supported", in)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		return err
	}
	shoff := binary.LittleEndian.Uint64(data[0x28:])
	shentsize := uint64(binary.LittleEndian.Uint16(data[0x3a:]))
	n := 0
	for i, s := range f.Sections {
		if !strings.HasPrefix(s.Name, ".debug_") || s.Flags&elf.SHF_COMPRESSED != 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		raw := data[s.Offset : s.Offset+s.Size]
		comp := enc.EncodeAll(raw, nil)
		chdr := make([]byte, 24)
		binary.LittleEndian.PutUint32(chdr[0:], uint32(elf.COMPRESS_ZSTD))
		binary.LittleEndian.PutUint64(chdr[8:], s.Size)
		binary.LittleEndian.PutUint64(chdr[16:], max(s.Addralign, 1))
		body := append(chdr, comp...)
		if uint64(len(body)) >= s.Size {
			continue
		}
		copy(data[s.Offset:], body)
		clear(data[s.Offset+uint64(len(body)) : s.Offset+s.Size])
		h := data[shoff+uint64(i)*shentsize:]
		binary.LittleEndian.PutUint64(h[8:], uint64(s.Flags|elf.SHF_COMPRESSED)) // sh_flags
		binary.LittleEndian.PutUint64(h[32:], uint64(len(body)))                 // sh_size
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s: no debug section to compress", in)
	}
	return os.WriteFile(out, data, 0o755)
}
