package web

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/views"
	"viewer/web/debuginfo"
)

// SourceConfig says where the source view may look for a function's
// source file.
type SourceConfig struct {
	// Fetcher asks debuginfod servers for /buildid/ID/source/PATH; nil
	// means debuginfod is off.
	Fetcher symbolize.Fetcher
	// Servers name the debuginfod servers, for messages.
	Servers []string
	// LocalPaths lets the server read the absolute paths a profile names,
	// on this machine. Only for a server that listens on loopback: its
	// user is the machine's user (serve decides it as for mappings). Even
	// then a path is read only when the binary's debug info (Units) was
	// found on this machine (not uploaded or downloaded) and names it, it
	// is under that compile unit's directory or one of Roots, and not
	// under /proc, /sys or /dev.
	LocalPaths bool
	// Units finds the compile unit of a sampled address in the binary's
	// debug info, to check a path against (nil: local paths are not read).
	Units SourceUnits
	// Roots are the --source-dir directories: local source under them may
	// be read although outside its compile unit's directory.
	Roots []string
	// Dirs are searched for the file: DIR/ABSOLUTE/PATH (a sysroot or a
	// copy of the source tree) and DIR/BASENAME (--debug-dir).
	Dirs []string
	// Uploaded are the source archives uploaded with debug files (PUT
	// /buildid/ID/sources), asked before debuginfod; nil: none.
	Uploaded *debuginfo.Store
	// Timeout bounds a debuginfod fetch (default 30s).
	Timeout time.Duration

	localRefusal string // why this request may not read local paths
}

// SourceUnits is the part of the symbolization engine the source view
// checks a local path with: the compile unit holding addr in mapping m.
type SourceUnits = symbolize.SourceUnits

// EngineUnits answers SourceUnits from the symbolization engine's debug
// info (found as symbolization finds it, kept in its store).
type EngineUnits struct{ Engine *symbolize.Symbolizer }

// Unit opens m's debug info and returns the unit holding addr. Debug info
// not found on this machine (uploaded, or from debuginfod) is refused with
// symbolize.ErrForeignDebugInfo: whoever made it chose the paths it names.
func (u EngineUnits) Unit(ctx context.Context, m *profile.Mapping, addr uint64) (symbolize.CompileUnit, bool, error) {
	h, err := u.Engine.Open(ctx, m, symbolize.Options{})
	if err != nil {
		return symbolize.CompileUnit{}, false, err
	}
	defer h.Close()
	if !h.Local() {
		return symbolize.CompileUnit{}, false, symbolize.ErrForeignDebugInfo
	}
	return h.Unit(addr)
}

// maxSourceBytes bounds a source file shown.
const maxSourceBytes = 8 << 20

// sourceConfig is cfg.Source, else what symbolization implies: debuginfod
// through its gate, no local paths.
func (s *Server) sourceConfig() SourceConfig {
	if s.cfg.Source != nil {
		return *s.cfg.Source
	}
	var sc SourceConfig
	if sym := s.cfg.Symbolization; sym != nil && sym.Gate.Enabled() && len(sym.Servers) > 0 {
		sc.Fetcher = sym.Gate
		sc.Servers = sym.Servers
	}
	if sym := s.cfg.Symbolization; sym != nil && sym.Engine != nil {
		sc.Units = EngineUnits{sym.Engine}
	}
	return sc
}

// lineValues is a function's per-line values in one source file.
type lineValues struct {
	file    string
	buildID string
	mapping string
	flat    map[int64]int64
	cum     map[int64]int64
	total   int64  // the function's cum in this file
	sites   []site // sampled addresses with this file, to find its compile units
}

// site is one sampled address of a mapping.
type site = symbolize.SourceSite

// maxSites bounds the compile units looked up to check one file.
const maxSites = 8

// functionLines gathers, for the function named fn (or, when fn is empty,
// every function of the file named file), the flat and cum value of each
// line of each file it has samples in (cum counts a line once per sample,
// flat is the sample's innermost line), most sampled file first.
func functionLines(p *profile.Profile, si int, fn, file string) []*lineValues {
	byFile := map[string]*lineValues{}
	get := func(file string, m *profile.Mapping) *lineValues {
		lv := byFile[file]
		if lv == nil {
			lv = &lineValues{file: file, flat: map[int64]int64{}, cum: map[int64]int64{}}
			byFile[file] = lv
		}
		if lv.buildID == "" && m != nil {
			lv.buildID, lv.mapping = m.BuildID, m.File
		}
		return lv
	}
	type fl struct {
		file string
		line int64
	}
	seen := map[fl]bool{}
	seenFile := map[string]bool{}
	for _, s := range p.Sample {
		if si >= len(s.Value) || s.Value[si] == 0 {
			continue
		}
		v := s.Value[si]
		clear(seen)
		clear(seenFile)
		for li, l := range s.Location {
			for k, ln := range l.Line {
				f := ln.Function
				if f == nil {
					continue
				}
				if fn == "" {
					if f.Filename != file {
						continue
					}
				} else if f.Name != fn && !(f.Name == "" && f.SystemName == fn) {
					continue
				}
				lv := get(f.Filename, l.Mapping)
				if l.Mapping != nil && l.Address != 0 && len(lv.sites) < maxSites &&
					(len(lv.sites) == 0 || lv.sites[len(lv.sites)-1].Addr != l.Address) {
					lv.sites = append(lv.sites, site{Mapping: l.Mapping, Addr: l.Address})
				}
				key := fl{f.Filename, ln.Line}
				if !seen[key] {
					seen[key] = true
					lv.cum[ln.Line] += v
				}
				if !seenFile[f.Filename] {
					seenFile[f.Filename] = true
					lv.total += v
				}
				if li == 0 && k == 0 {
					lv.flat[ln.Line] += v
				}
			}
		}
	}
	var out []*lineValues
	for _, lv := range byFile {
		out = append(out, lv)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].total != out[j].total {
			return out[i].total > out[j].total
		}
		return out[i].file < out[j].file
	})
	return out
}

// findSource reads file for buildID from the first place that has it and
// says where; on failure the error explains every place it looked.
func findSource(ctx context.Context, sc SourceConfig, lv *lineValues) (text []byte, origin string, err error) {
	var why []string
	buildID := lv.buildID
	clean := filepath.Clean(lv.file)
	if filepath.IsAbs(clean) {
		switch {
		case sc.localRefusal != "":
			why = append(why, sc.localRefusal)
		case sc.LocalPaths:
			b, err := symbolize.ReadNamedSource(ctx, clean, sc.Units, lv.sites, sc.Roots, sc.Timeout, maxSourceBytes)
			if err == nil {
				return b, "this machine: " + clean, nil
			}
			why = append(why, fmt.Sprintf("%s is not read on this machine (%v)", clean, symbolize.ReadErrReason(err)))
		default:
			why = append(why, "the server does not read paths named by profiles (it does only when it listens on loopback)")
		}
	}
	if b, cand, ok := symbolize.ReadSourceDir(ctx, sc.Dirs, clean, maxSourceBytes); ok {
		return b, "source directory: " + cand, nil
	}
	if len(sc.Dirs) > 0 {
		why = append(why, fmt.Sprintf("not under %s", strings.Join(sc.Dirs, ", ")))
	}
	if sc.Uploaded != nil && buildID != "" && filepath.IsAbs(clean) {
		if b, err := uploadedSource(ctx, sc.Uploaded, buildID, clean); err == nil {
			return b, "uploaded source archive", nil
		} else if !errors.Is(err, debuginfo.ErrNotFound) {
			why = append(why, fmt.Sprintf("the uploaded source archive failed: %v", symbolize.ReadErrReason(err)))
		}
	}
	switch {
	case buildID == "":
		why = append(why, "the binary has no build ID, so debuginfod cannot be asked")
	case sc.Fetcher == nil:
		why = append(why, "debuginfod is off on this server")
	case !filepath.IsAbs(clean):
		why = append(why, "debuginfod serves sources by absolute path and this path is relative")
	default:
		timeout := sc.Timeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		fctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		path, err := sc.Fetcher.Fetch(fctx, buildID, symbolize.SourceKind(clean), nil)
		if err == nil {
			b, rerr := symbolize.ReadFetchedSource(ctx, path, maxSourceBytes)
			if rerr == nil {
				return b, "debuginfod (" + strings.Join(sc.Servers, ", ") + ")", nil
			}
			err = rerr
		}
		servers := strings.Join(sc.Servers, ", ")
		if servers == "" {
			servers = "the configured servers"
		}
		if errors.Is(err, symbolize.ErrFetchNotFound) {
			why = append(why, fmt.Sprintf("not found on debuginfod servers %s", servers))
		} else {
			why = append(why, fmt.Sprintf("debuginfod (%s) failed: %v", servers, symbolize.ReadErrReason(err)))
		}
	}
	return nil, "", errors.New(strings.Join(why, "; "))
}

// uploadedSource reads file clean of build ID bid from its uploaded source
// archive, up to maxSourceBytes.
func uploadedSource(ctx context.Context, files *debuginfo.Store, bid, clean string) ([]byte, error) {
	if debuginfo.ValidBuildID(bid) != nil {
		return nil, debuginfo.ErrNotFound
	}
	f, err := files.Open(ctx, bid, symbolize.SourceKind(filepath.ToSlash(clean)), false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size > maxSourceBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the %d bytes the source view shows", clean, f.Size, maxSourceBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxSourceBytes))
}

// handleSource renders /p/ID/source?fn=NAME[&file=PATH]: the function's
// source with each line's flat and cum values, or why it can't.
func (s *Server) handleSource(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	fn, want := c.QueryParam("fn"), c.QueryParam("file")
	if fn == "" && want == "" {
		return httpError(http.StatusBadRequest, "fn or file is missing: give the function name, as the flame graph shows it, or a source file path")
	}
	what := fn
	if fn == "" {
		what = want
	}
	l, i, err := s.profileSample(ctx, id, c.QueryParam("si"))
	if err != nil {
		return err
	}
	st := l.Meta.SampleTypes[i]
	page := views.SourcePage{
		Page:     withHelp(s.profilePage(c, id, l.Meta, displayName(l.Meta, id)+" · source of "+what, nav(c, id, "")), "/docs/pages#source"),
		ID:       id,
		Fn:       what,
		Unit:     st.Unit,
		FlameURL: profileURL(id, "", c.QueryParam("si")),
		// Callers of the function, and its instructions (annotate).
		SandwichURL: "/p/" + id + "/sandwich?" + url.Values{"fn": {fn}, "si": {st.Type}}.Encode(),
		AnnotateURL: "/p/" + id + "/annotate?" + url.Values{"fn": {fn}, "si": {st.Type}}.Encode(),
	}
	if fn != "" {
		page.AnnotateURL = annotateURL(id, fn, c.QueryParam("si"), true)
	}
	files := functionLines(l.Profile, i, fn, want)
	var lv *lineValues
	for _, f := range files {
		if want == "" && lv == nil || f.file == want {
			lv = f
		}
	}
	for _, f := range files {
		if f != lv && f.file != "" {
			page.Others = append(page.Others, views.NavLink{Label: f.file,
				Href: "/p/" + id + "/source?" + url.Values{"fn": {fn}, "file": {f.file}, "si": {st.Type}}.Encode()})
		}
	}
	switch {
	case len(files) == 0:
		page.Problem = fmt.Sprintf("No samples of %s for %s: pick a frame from the flame graph (unsymbolized frames have no source).", what, st.Type)
		return Render(c, http.StatusNotFound, views.Source(page))
	case lv == nil:
		page.Problem = fmt.Sprintf("%s has no samples in %s.", fn, want)
		return Render(c, http.StatusNotFound, views.Source(page))
	}
	page.File, page.BuildID = lv.file, lv.buildID
	page.Total = sampling.FormatValue(lv.total, st.Unit)
	if lv.file == "" {
		page.Problem = "The profile names no source file for " + fn + ": it was symbolized without line tables (symbol table only), so there is no file or line to show."
		return Render(c, http.StatusOK, views.Source(page))
	}
	sc := s.sourceConfig()
	sc.LocalPaths = sc.LocalPaths && localRequest(c) // hosts.go: not through a proxy or a rebound name
	if sc.LocalPaths && !s.authorized(c) {
		sc.localRefusal = "reading source files on this machine needs the server's token: sign in at /login"
	}
	if d := s.cfg.Debuginfo; d != nil && d.Files != nil && (d.Serve != "token" || s.authorized(c)) {
		sc.Uploaded = d.Files
	}
	text, origin, err := findSource(ctx, sc, lv)
	if err != nil {
		page.Problem = "Source not available: " + err.Error() + "."
		// The per-line values are still worth showing.
		page.Lines = sourceLines(nil, lv, st.Unit)
		return Render(c, http.StatusOK, views.Source(page))
	}
	page.Origin = origin
	page.Lines = sourceLines(text, lv, st.Unit)
	return Render(c, http.StatusOK, views.Source(page))
}

// sourceLines pairs the text's lines with their values; without text, only
// the lines that have values are listed.
func sourceLines(text []byte, lv *lineValues, unit string) []views.SourceLine {
	// One unit a column, as pprof writes a report.
	column := func(m map[int64]int64) sampling.Column {
		vs := make([]int64, 0, len(m))
		for _, v := range m {
			vs = append(vs, v)
		}
		return sampling.ColumnOf(unit, vs...)
	}
	flatCol, cumCol := column(lv.flat), column(lv.cum)
	val := func(m map[int64]int64, col sampling.Column, n int) string {
		if v := m[int64(n)]; v != 0 {
			return col.Format(v)
		}
		return ""
	}
	mk := func(n int, t string) views.SourceLine {
		cum := lv.cum[int64(n)]
		frac := 0.0
		if lv.total > 0 {
			frac = float64(cum) / float64(lv.total)
		}
		return views.SourceLine{N: n, Text: t, Flat: val(lv.flat, flatCol, n), Cum: val(lv.cum, cumCol, n), CumFrac: frac, Hot: cum != 0}
	}
	var out []views.SourceLine
	if text == nil {
		var ns []int
		for n := range lv.cum {
			if n > 0 {
				ns = append(ns, int(n))
			}
		}
		sort.Ints(ns)
		for _, n := range ns {
			out = append(out, mk(n, ""))
		}
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), maxSourceBytes)
	for n := 1; sc.Scan(); n++ {
		out = append(out, mk(n, strings.ToValidUTF8(strings.TrimRight(sc.Text(), "\r"), "\uFFFD")))
	}
	return out
}
