package web

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"viewer/symbolize"
)

// The Mozilla symbolication API (Tecken's /symbolicate/v5), which the
// Firefox Profiler and samply speak, so either can use viewer as the symbol
// server for ELF binaries. A module is [debugName, debugID]: the debug ID
// is a breakpad ID (the build ID's first 16 bytes as a GUID, plus an age
// digit), or the whole build ID as a code ID. Offsets are from the
// module's image base.

// SymbolicateOrigins are the pages allowed to call /symbolicate/v5 from
// the browser (CORS): the Firefox Profiler. Other routes send no CORS
// headers.
var SymbolicateOrigins = []string{"https://profiler.firefox.com"}

// symbolicateCORS answers the browser's preflight of /symbolicate/v5 and
// marks its answers readable by SymbolicateOrigins, so that
// profiler.firefox.com can use this server as its symbol server. A server
// with --auth-token refuses it: the profiler sends no token.
var symbolicateCORS = middleware.CORSWithConfig(middleware.CORSConfig{
	AllowOrigins: SymbolicateOrigins,
	AllowMethods: []string{http.MethodPost},
	AllowHeaders: []string{echo.HeaderContentType, "User-Agent"}, // the Firefox Profiler sets User-Agent: Firefox preflights it
	MaxAge:       86400,
})

// symbolicateJob is one set of stacks with their modules.
type symbolicateJob struct {
	MemoryMap [][]string   `json:"memoryMap"`
	Stacks    [][][2]int64 `json:"stacks"`
}

// symbolicateRequest is a v5 body: one job inline, or several in jobs.
type symbolicateRequest struct {
	symbolicateJob
	Jobs []symbolicateJob `json:"jobs"`
}

type symbolicateResult struct {
	Stacks       [][]v5Frame     `json:"stacks"`
	FoundModules map[string]bool `json:"found_modules"`
}

type v5Frame struct {
	Frame        int    `json:"frame"`
	ModuleOffset string `json:"module_offset"`
	Module       string `json:"module,omitempty"`
	Function     string `json:"function,omitempty"`
	// FunctionOffset is the offset from the function's start; the
	// Firefox Profiler takes no name without it.
	FunctionOffset string     `json:"function_offset,omitempty"`
	File           string     `json:"file,omitempty"`
	Line           int        `json:"line,omitempty"`
	Inlines        []v5Inline `json:"inlines,omitempty"`
}

type v5Inline struct {
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// handleSymbolicateV5 answers a /symbolicate/v5 request: per frame, its
// function, file and line, with inlined functions innermost first in
// "inlines", and per module whether its debug info was found.
func (s *Server) handleSymbolicateV5(c echo.Context) error {
	eng, err := s.addressEngine()
	if err != nil {
		return err
	}
	body, give, err := s.readAPIBody(c) // symbolizeapi.go: as /api/symbolize
	if err != nil {
		return err
	}
	defer give()
	leave, err := s.apiTurn(c)
	if err != nil {
		return err
	}
	defer leave()
	var req symbolicateRequest
	if err := decodeAPIBody(body, &req); err != nil {
		return err
	}
	jobs := req.Jobs
	if len(jobs) == 0 {
		jobs = []symbolicateJob{req.symbolicateJob}
	}
	modules, frames := 0, 0
	for _, j := range jobs {
		modules += len(j.MemoryMap)
		for _, st := range j.Stacks {
			frames += len(st)
		}
	}
	if modules > maxAPIBinaries || frames > maxAPIAddresses {
		return httpError(http.StatusRequestEntityTooLarge, "%d modules and %d frames in one request; at most %d and %d", modules, frames, maxAPIBinaries, maxAPIAddresses)
	}
	giveFrames, err := s.apiAddressMemory(c, frames)
	if err != nil {
		return err
	}
	defer giveFrames()
	out := struct {
		Results []symbolicateResult `json:"results"`
	}{}
	ctx := s.fetchQuota(c) // the request's jobs share its fetches
	for ji, j := range jobs {
		res, err := symbolicateJobWith(ctx, eng, j)
		if err != nil {
			return httpError(http.StatusBadRequest, "jobs[%d]: %v", ji, err)
		}
		out.Results = append(out.Results, res)
	}
	return c.JSON(http.StatusOK, out)
}

func symbolicateJobWith(ctx context.Context, eng *symbolize.Symbolizer, j symbolicateJob) (symbolicateResult, error) {
	res := symbolicateResult{FoundModules: map[string]bool{}, Stacks: make([][]v5Frame, len(j.Stacks))}
	// The offsets each module is asked for, once each.
	bins := make([]symbolize.BinaryAddresses, len(j.MemoryMap))
	index := make([]map[int64]int, len(j.MemoryMap))
	for mi, m := range j.MemoryMap {
		if len(m) < 2 {
			return res, fmt.Errorf("memoryMap[%d] is %q; want [debugName, debugID]", mi, m)
		}
		bid, ok := moduleBuildID(eng, m[1:])
		bins[mi] = symbolize.BinaryAddresses{BuildID: bid, File: m[0], Base: symbolize.ModuleOffsets}
		index[mi] = map[int64]int{}
		if !ok {
			bins[mi].BuildID = "" // not looked up: no build ID known
		}
	}
	for _, st := range j.Stacks {
		for _, f := range st {
			mi, off := int(f[0]), f[1]
			if mi < 0 || mi >= len(bins) || off < 0 || bins[mi].BuildID == "" {
				continue
			}
			if _, ok := index[mi][off]; !ok {
				index[mi][off] = len(bins[mi].Addresses)
				bins[mi].Addresses = append(bins[mi].Addresses, uint64(off))
			}
		}
	}
	var ask []symbolize.BinaryAddresses
	var askIdx []int
	for mi, b := range bins {
		if b.BuildID != "" && len(b.Addresses) > 0 {
			ask = append(ask, b)
			askIdx = append(askIdx, mi)
		}
	}
	found := make([]*symbolize.BinaryFrames, len(bins))
	got := eng.SymbolizeAddresses(ctx, ask, symbolize.Options{})
	for k := range got {
		found[askIdx[k]] = &got[k]
	}
	for mi, m := range j.MemoryMap {
		key := m[0] + "/" + m[1]
		res.FoundModules[key] = found[mi] != nil && found[mi].State == symbolize.StateSymbolized
	}
	for si, st := range j.Stacks {
		res.Stacks[si] = make([]v5Frame, len(st))
		for fi, f := range st {
			mi, off := int(f[0]), f[1]
			fr := v5Frame{Frame: fi, ModuleOffset: fmt.Sprintf("%#x", off)}
			if mi >= 0 && mi < len(bins) {
				fr.Module = j.MemoryMap[mi][0]
				if r := found[mi]; r != nil && r.State == symbolize.StateSymbolized {
					if ai, ok := index[mi][off]; ok && ai < len(r.Frames) {
						if chain := r.Frames[ai]; len(chain) > 0 {
							outer := chain[len(chain)-1]
							fr.Function, fr.File, fr.Line = outer.Function, outer.File, outer.Line
							// The Firefox Profiler drops a function without its
							// offset (naming the frame "<unknown at …>"), and
							// groups frames into functions by address − offset.
							// Without a symbol, 0: the frame is its own function,
							// still named.
							fr.FunctionOffset = "0x0"
							if outer.HasFuncOffset {
								fr.FunctionOffset = fmt.Sprintf("%#x", outer.FuncOffset)
							}
							for _, in := range chain[:len(chain)-1] {
								fr.Inlines = append(fr.Inlines, v5Inline{Function: in.Function, File: in.File, Line: in.Line})
							}
						}
					}
				}
			}
			res.Stacks[si][fi] = fr
		}
	}
	return res, nil
}

// moduleBuildID maps a module's IDs to a GNU build ID: a code ID is the
// build ID itself; a breakpad ID (32 hex digits and an age) holds its
// first 16 bytes, completed from the debug files found locally.
func moduleBuildID(eng *symbolize.Symbolizer, ids []string) (string, bool) {
	for _, id := range ids {
		id = strings.ToLower(strings.TrimSpace(id))
		if prefix, ok := breakpadPrefix(id); ok {
			if full, ok := eng.CompleteBuildID(prefix); ok {
				return full, true
			}
			continue
		}
		if bid, err := cleanBuildID(id); err == nil {
			return bid, true
		}
	}
	return "", false
}

// breakpadPrefix turns a breakpad debug ID into the hex of the build ID
// bytes it holds: the GUID's first three fields are little-endian, so
// their bytes are swapped back; the last hex digit is the age.
func breakpadPrefix(id string) (string, bool) {
	if len(id) != 33 {
		return "", false
	}
	b, err := hex.DecodeString(id[:32])
	if err != nil {
		return "", false
	}
	b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0]
	b[4], b[5] = b[5], b[4]
	b[6], b[7] = b[7], b[6]
	return hex.EncodeToString(b), true
}

// BreakpadID is the breakpad debug ID of a GNU build ID, as the Firefox
// Profiler and samply name ELF modules.
func BreakpadID(buildID string) string {
	b, _ := hex.DecodeString(buildID)
	var g [16]byte
	copy(g[:], b)
	g[0], g[1], g[2], g[3] = g[3], g[2], g[1], g[0]
	g[4], g[5] = g[5], g[4]
	g[6], g[7] = g[7], g[6]
	return strings.ToUpper(hex.EncodeToString(g[:])) + "0"
}
