package perftext

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxLine bounds one line of a text input. A folded stack of a few thousand
// frames is well under it; a longer "line" is a binary or a file whose
// line breaks were lost, and is refused rather than held whole.
const MaxLine = 4 << 20

// byte-order marks that start a text file a Windows editor or PowerShell wrote.
var (
	bomUTF8    = []byte{0xef, 0xbb, 0xbf}
	bomUTF16LE = []byte{0xff, 0xfe}
	bomUTF16BE = []byte{0xfe, 0xff}
)

// DecodeText returns data as UTF-8 without its byte-order mark: UTF-16
// (LE or BE) with a BOM is converted, a UTF-8 BOM is dropped, and anything
// else is returned unchanged. Unpaired surrogates become U+FFFD.
func DecodeText(data []byte) []byte {
	switch {
	case bytes.HasPrefix(data, bomUTF8):
		return data[len(bomUTF8):]
	case bytes.HasPrefix(data, bomUTF16LE):
		return utf16ToUTF8(data[2:], binary.LittleEndian)
	case bytes.HasPrefix(data, bomUTF16BE):
		return utf16ToUTF8(data[2:], binary.BigEndian)
	}
	return data
}

func utf16ToUTF8(b []byte, order binary.ByteOrder) []byte {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = order.Uint16(b[2*i:])
	}
	out := make([]byte, 0, len(u))
	for _, r := range utf16.Decode(u) {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// eachLine calls fn with each line of data (1-based number, "\r\n" or "\n"
// stripped), failing with ErrLimit on a line over MaxLine bytes.
func eachLine(data []byte, fn func(n int, line string) error) error {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(line) > MaxLine {
			return fmt.Errorf("%w: line %d is longer than the %d-byte limit (%d bytes); a text profile has one stack or frame per line: were its line breaks lost?", ErrLimit, n, MaxLine, len(line))
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if err := fn(n, string(line)); err != nil {
			return err
		}
	}
	return nil
}
