package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"viewer/symbolize"
	"viewer/symbolize/buildid"
)

// Bounds of one symbolization API request, so its work stays proportional
// to what a caller may ask at once.
const (
	maxAPIBinaries  = 256
	maxAPIAddresses = 1_000_000
	maxAPIBody      = 64 << 20
)

// What a symbolization API request is charged in --ingest-memory: its
// body while it is decoded (apiBodyMemory × its size, the whole bound
// when its length is not given), then apiAddressMemory per address for
// the lookups and the answer. Measured: 1M addresses took 480 MB.
const (
	apiBodyMemory    = 3
	apiAddressMemory = 512
)

// newAPITurns are the places of the symbolization API requests worked at
// once: the cores, the others waiting up to --upload-wait, in arrival
// order. Four requests of 1M addresses at once took 1.33 GB.
func newAPITurns(l Limits) *places {
	w := l.UploadWait
	if w <= 0 {
		w = 2 * time.Second
	}
	return &places{ch: make(chan struct{}, max(2, runtime.GOMAXPROCS(0))), wait: w}
}

// apiBodyMemory takes what decoding the request's body is charged
// (apiBodyMemory) from --ingest-memory: 413 or 503 naming the flag when
// it cannot be had.
func (s *Server) apiBodyMemory(c echo.Context) (release func(), err error) {
	body := c.Request().ContentLength
	if body <= 0 || body > maxAPIBody {
		body = maxAPIBody
	}
	release, err = s.limits.Memory.Take(c.Request().Context(), apiBodyMemory*body, "symbolization request")
	return release, httpStatusError(err)
}

// apiAddressMemory takes what looking up n addresses and answering them
// is charged (apiAddressMemory each) from --ingest-memory.
func (s *Server) apiAddressMemory(c echo.Context, n int) (release func(), err error) {
	release, err = s.limits.Memory.Take(c.Request().Context(), int64(n)*apiAddressMemory, fmt.Sprintf("symbolization request of %d addresses", n))
	return release, httpStatusError(err)
}

// apiTurn waits for a place among the symbolization API requests worked
// at once (apiTurns), answering 503 with Retry-After when none frees up.
func (s *Server) apiTurn(c echo.Context) (leave func(), err error) {
	if !s.apiTurns.enter(c.Request().Context()) {
		secs := max(1, int(s.apiTurns.wait.Round(time.Second)/time.Second))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return nil, httpError(http.StatusServiceUnavailable,
			"the server is busy with %d other symbolization requests (at most %d at once, its cores); retry in %d s (or restart it with a larger --upload-wait)",
			cap(s.apiTurns.ch), cap(s.apiTurns.ch), secs)
	}
	return s.apiTurns.leave, nil
}

// symbolizeRequest is the body of POST /api/symbolize.
type symbolizeRequest struct {
	Binaries []struct {
		BuildID   string   `json:"build_id"`
		File      string   `json:"file"`
		Addresses []string `json:"addresses"`
	} `json:"binaries"`
	// Debuginfod false keeps this request to local debug info.
	Debuginfod *bool `json:"debuginfod"`
}

// symbolizeResponse answers POST /api/symbolize, binaries in request order.
type symbolizeResponse struct {
	Binaries []apiBinary `json:"binaries"`
}

type apiBinary struct {
	BuildID   string       `json:"build_id"`
	File      string       `json:"file,omitempty"`
	State     string       `json:"state"`
	Source    string       `json:"source,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	Addresses []apiAddress `json:"addresses"`
}

type apiAddress struct {
	Address string `json:"address"`
	// Frames, innermost first: the inline chain, then the function.
	Frames []apiFrame `json:"frames"`
}

type apiFrame struct {
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Inlined  bool   `json:"inlined"`
}

// addressEngine is the engine the symbolization APIs use: the server's,
// or, when it runs without symbolization, the local-only one the
// data-type page uses (datatypes.go).
func (s *Server) addressEngine() (*symbolize.Symbolizer, error) {
	return s.dataTypeEngine(), nil
}

// handleSymbolizeAPI names file-relative addresses of binaries given by
// build ID, as addr2line takes them, with the engine, cache, debuginfod
// policy and privacy switch the pages use. With Accept: text/event-stream
// it streams each binary's progress ("binary" events, as the profile
// page's panel gets them) before the answer (a "result" event).
func (s *Server) handleSymbolizeAPI(c echo.Context) error {
	eng, err := s.addressEngine()
	if err != nil {
		return err
	}
	leave, err := s.apiTurn(c)
	if err != nil {
		return err
	}
	defer leave()
	give, err := s.apiBodyMemory(c)
	if err != nil {
		return err
	}
	defer give()
	var req symbolizeRequest
	if err := decodeAPIBody(c, &req); err != nil {
		return err
	}
	if len(req.Binaries) == 0 {
		return httpError(http.StatusBadRequest, `the request names no binaries; send {"binaries": [{"build_id": "HEX", "addresses": ["0x1234"]}]}`)
	}
	if len(req.Binaries) > maxAPIBinaries {
		return httpError(http.StatusRequestEntityTooLarge, "%d binaries in one request; at most %d", len(req.Binaries), maxAPIBinaries)
	}
	bins := make([]symbolize.BinaryAddresses, len(req.Binaries))
	total := 0
	for i, b := range req.Binaries {
		bid, err := cleanBuildID(b.BuildID)
		if err != nil {
			return httpError(http.StatusBadRequest, "binaries[%d]: %v", i, err)
		}
		total += len(b.Addresses)
		if total > maxAPIAddresses {
			return httpError(http.StatusRequestEntityTooLarge, "more than %d addresses in one request; split it", maxAPIAddresses)
		}
		addrs := make([]uint64, len(b.Addresses))
		for j, a := range b.Addresses {
			v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(a)), "0x"), 16, 64)
			if err != nil {
				return httpError(http.StatusBadRequest, "binaries[%d].addresses[%d] is %q, not a hexadecimal address like \"0x1234\"", i, j, a)
			}
			addrs[j] = v
		}
		bins[i] = symbolize.BinaryAddresses{BuildID: bid, File: b.File, Addresses: addrs, Base: symbolize.ObjectAddresses}
	}
	giveAddrs, err := s.apiAddressMemory(c, total)
	if err != nil {
		return err
	}
	defer giveAddrs()
	opt := symbolize.Options{NoDebuginfod: req.Debuginfod != nil && !*req.Debuginfod}
	stream := strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream")
	var send func(event string, v any)
	if stream {
		send = eventStream(c)
		opt.Progress = func(ev symbolize.Event) { send("binary", binaryEvent(ev)) }
	}
	res := eng.SymbolizeAddresses(s.fetchQuota(c), bins, opt)
	out := symbolizeResponse{Binaries: make([]apiBinary, len(res))}
	for i, r := range res {
		ab := apiBinary{BuildID: r.BuildID, File: r.File, State: string(r.State), Source: r.Source, Reason: r.Reason,
			Addresses: make([]apiAddress, len(bins[i].Addresses))}
		for j, a := range bins[i].Addresses {
			ab.Addresses[j] = apiAddress{Address: fmt.Sprintf("%#x", a), Frames: []apiFrame{}}
			if j < len(r.Frames) {
				for k, f := range r.Frames[j] {
					ab.Addresses[j].Frames = append(ab.Addresses[j].Frames, apiFrame{Function: f.Function, File: f.File, Line: f.Line, Inlined: k < len(r.Frames[j])-1})
				}
			}
		}
		out.Binaries[i] = ab
	}
	if stream {
		send("result", out)
		return nil
	}
	return c.JSON(http.StatusOK, out)
}

// binaryEvent is one binary's progress as the profile page's panel gets
// it: its key, state, where from, and bytes of a fetch.
func binaryEvent(ev symbolize.Event) map[string]any {
	m := map[string]any{"build_id": ev.BuildID, "file": ev.File, "state": string(ev.State)}
	if ev.Source != "" {
		m["source"] = ev.Source
	}
	if ev.Err != nil {
		m["reason"] = ev.Err.Error()
	}
	if p := ev.Fetch; p != nil {
		m["server"], m["phase"], m["bytes"], m["total"] = p.Server, string(p.Phase), p.Bytes, p.Total
	}
	return m
}

// eventStream starts a text/event-stream answer and returns a function
// that sends one event, safe to call from any goroutine.
func eventStream(c echo.Context) func(event string, v any) {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	return func(event string, v any) {
		<-ch
		defer func() { ch <- struct{}{} }()
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		w.Flush()
	}
}

// decodeAPIBody reads a JSON body of at most maxAPIBody bytes into v.
func decodeAPIBody(c echo.Context, v any) error {
	r := c.Request()
	if r.ContentLength > maxAPIBody {
		return httpError(http.StatusRequestEntityTooLarge, "the request body is over %s", humanBytes(maxAPIBody))
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, maxAPIBody))
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpError(http.StatusRequestEntityTooLarge, "the request body is over %s", humanBytes(maxAPIBody))
		}
		if err == io.EOF {
			return httpError(http.StatusBadRequest, "the request has no body; send JSON")
		}
		return httpError(http.StatusBadRequest, "the request body is not the JSON expected: %v", err)
	}
	return nil
}

// cleanBuildID checks a build ID with the one build-ID check
// (buildid.Normalize) before it names a file or reaches a URL,
// and lowercases it. The API also wants at least 8 digits: a shorter ID
// cannot name one binary.
func cleanBuildID(id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", fmt.Errorf("no build_id; the symbolization API finds debug info by build ID")
	}
	n, err := buildid.Normalize(id)
	if err != nil {
		var ie *buildid.InvalidError
		if errors.As(err, &ie) {
			return "", fmt.Errorf("build_id %q is not a build ID: %s; a GNU build ID is an even number of hex digits, usually 40", id, ie.Reason)
		}
		return "", fmt.Errorf("build_id %q: %v", id, err)
	}
	if len(n) < 8 {
		return "", fmt.Errorf("build_id %q has %d hex digits; a GNU build ID has an even number, usually 40", id, len(n))
	}
	return n, nil
}
