// Package buildid is what viewer knows of GNU build IDs without opening a
// file: the one check a build ID passes before it names a path or reaches a
// URL (Normalize), and the one list of places a directory may keep a file by
// build ID (Paths), which the symbolizer's locator, its kernel search and the
// server's --serve-local-debug all search. It imports nothing of the project,
// so every layer may use it.
package buildid

import (
	"fmt"
	"path/filepath"
	"strings"
)

// MaxLen is the longest build ID accepted, in hex characters (elfutils'
// MAX_BUILD_ID_BYTES is 64 bytes).
const MaxLen = 128

// InvalidError says why Normalize refused a build ID.
type InvalidError struct {
	BuildID string
	Reason  string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("debuginfod: invalid build ID %q: %s; a build ID is an even number of hex digits, at most %d", e.BuildID, e.Reason, MaxLen)
}

// Normalize checks id and returns it in lowercase, the only form debuginfod
// servers, the elfutils cache and build-ID trees use: an even number of hex
// digits, at most MaxLen, in either case. Nothing that fails this check ever
// reaches a URL or a path. Errors are *InvalidError.
func Normalize(id string) (string, error) {
	reason := ""
	switch {
	case id == "":
		reason = "it is empty"
	case len(id) > MaxLen:
		reason = fmt.Sprintf("it has %d characters, more than %d", len(id), MaxLen)
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
		return "", &InvalidError{BuildID: id, Reason: reason}
	}
	return strings.ToLower(id), nil
}

// Layout is a way a directory keeps files by build ID; layouts combine
// with |.
type Layout uint8

// The layouts, in the order Paths lists them.
const (
	// Tree is a build-ID tree as /usr/lib/debug has it:
	// DIR/.build-id/ab/cdef….debug (debug info), DIR/.build-id/ab/cdef…
	// (the binary).
	Tree Layout = 1 << iota
	// Bare is a copied .build-id tree given as DIR itself:
	// DIR/ab/cdef….debug, DIR/ab/cdef….
	Bare
	// Perf is perf's build-ID cache (~/.debug):
	// DIR/.build-id/ab/cdef…/{debug,elf,vdso,kallsyms}, and
	// DIR/[kernel.kallsyms]/abcdef…/kallsyms.
	Perf
	// Debuginfod is a debuginfod client's cache, or a directory laid out
	// like one: DIR/abcdef…/{debuginfo,executable}.
	Debuginfod
	// Vmlinux is DIR/vmlinux, the kernel's debug info whatever its build
	// ID (the caller checks it); listed only for Kind Kernel.
	Vmlinux
)

// Kind is what file is wanted; kinds combine with |.
type Kind uint8

// The kinds of file.
const (
	Debuginfo  Kind = 1 << iota // a separate debug file (or a binary with its DWARF)
	Executable                  // the binary itself
	VDSO                        // perf's copy of a vDSO
	Kernel                      // a vmlinux (with Debuginfo: also by name, Vmlinux)
	Kallsyms                    // perf's copy of a kernel's /proc/kallsyms
)

// Candidate is one path where a file of build ID id may be.
type Candidate struct {
	Path   string
	Layout Layout
	Kind   Kind
}

// Paths lists, best first, where a directory dir kept in layouts keeps
// files of kinds for build ID id (as Normalize returns it). It lists none
// by build ID for an ID of fewer than 4 digits. Layouts come in the order
// of the constants; within each, debug info before the binary.
func Paths(dir, id string, layouts Layout, kinds Kind) []Candidate {
	var c []Candidate
	add := func(l Layout, k Kind, p string) {
		if layouts&l != 0 && kinds&k != 0 {
			c = append(c, Candidate{Path: p, Layout: l, Kind: k})
		}
	}
	if len(id) >= 4 {
		tree := filepath.Join(dir, ".build-id", id[:2], id[2:])
		bare := filepath.Join(dir, id[:2], id[2:])
		add(Tree, Debuginfo, tree+".debug")
		add(Tree, Executable, tree)
		add(Bare, Debuginfo, bare+".debug")
		add(Bare, Executable, bare)
		add(Perf, Debuginfo, filepath.Join(tree, "debug"))
		add(Perf, Executable, filepath.Join(tree, "elf"))
		add(Perf, VDSO, filepath.Join(tree, "vdso"))
		add(Perf, Kallsyms, filepath.Join(tree, "kallsyms"))
		add(Perf, Kallsyms, filepath.Join(dir, "[kernel.kallsyms]", id, "kallsyms"))
		add(Debuginfod, Debuginfo, filepath.Join(dir, id, "debuginfo"))
		add(Debuginfod, Executable, filepath.Join(dir, id, "executable"))
	}
	if kinds&Kernel != 0 {
		add(Vmlinux, Kernel, filepath.Join(dir, "vmlinux"))
	}
	return c
}

// KernelPaths are where distributions and kernel builds put the vmlinux of
// kernel release (uname -r), best first.
func KernelPaths(release string) []string {
	if release == "" {
		return nil
	}
	return []string{
		"/usr/lib/debug/boot/vmlinux-" + release,
		"/usr/lib/debug/lib/modules/" + release + "/vmlinux",
		"/boot/vmlinux-" + release,
		"/lib/modules/" + release + "/build/vmlinux",
	}
}
