package debuginfod

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

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
