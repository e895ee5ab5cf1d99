package debuginfod

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

// MaxBuildIDLen is the longest build ID accepted, in hex characters
// (elfutils' MAX_BUILD_ID_BYTES is 64 bytes).
const MaxBuildIDLen = 128

// ValidBuildID reports whether id is a build ID this client will send: an
// even number of hex digits, at most MaxBuildIDLen of them, in either case.
func ValidBuildID(id string) bool {
	_, err := NormalizeBuildID(id)
	return err == nil
}

// NormalizeBuildID checks id and returns it in lowercase, the only form
// debuginfod servers and the elfutils cache accept. Nothing that fails this
// check ever reaches a URL or a path.
func NormalizeBuildID(id string) (string, error) {
	reason := ""
	switch {
	case id == "":
		reason = "it is empty"
	case len(id) > MaxBuildIDLen:
		reason = fmt.Sprintf("it has %d characters, more than %d", len(id), MaxBuildIDLen)
	case len(id)%2 != 0:
		reason = "it has an odd number of hex digits"
	default:
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				reason = fmt.Sprintf("character %d (%q) is not a hex digit", i+1, c)
				break
			}
		}
	}
	if reason != "" {
		return "", &InvalidBuildIDError{BuildID: id, Reason: reason}
	}
	return strings.ToLower(id), nil
}

// errNoBuildID means an ELF file carries no GNU build-ID note.
var errNoBuildID = errors.New("no GNU build-ID note")

// elfBuildID returns the lowercase hex GNU build ID of the ELF file r, or an
// error saying it is not ELF or has no build ID.
func elfBuildID(r io.ReaderAt) (id string, err error) {
	defer func() {
		// debug/elf has panicked on hostile input before; a bad file must
		// not take the process down.
		if p := recover(); p != nil {
			id, err = "", fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	if err := localfile.CheckMagic(r); err != nil {
		return "", err // says nothing of the bytes it found
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("not an ELF file: %w", err)
	}
	if id := elfsym.BuildIDNote(f); id != "" {
		return id, nil
	}
	return "", errNoBuildID
}

// FileBuildID returns the GNU build ID of the ELF file at path, lowercase.
func FileBuildID(path string) (string, error) {
	f, err := localfile.Open(context.Background(), path, localfile.Configured)
	if err != nil {
		return "", err
	}
	defer f.Close()
	id, err := elfBuildID(localfile.NewReader(path, f, 0, nil))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}
