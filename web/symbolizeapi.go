package web

import (
	"bytes"
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
// body while it is read and decoded (apiBodyMemory × the buffer holding
// it, taken as its bytes arrive: readAPIBody), then apiAddressMemory per
// address for the lookups and the answer. Measured: 1M addresses took
// 480 MB.
const (
	apiBodyMemory    = 3
	apiAddressMemory = 512
	// apiReadStep is the first buffer of a body of unknown length.
	apiReadStep = 64 << 10
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

// readAPIBody reads the request's body, at most maxAPIBody bytes, taking
// what it is charged (apiBodyMemory a byte of the buffer that holds it)
// from --ingest-memory as its bytes arrive, and before its turn among the
// requests worked at once (apiTurn): a client trickling its body holds
// memory for what it sent, not for what it announced, and no turn (four
// trickling 8 MiB bodies took every turn and 24 MiB each before a byte
// came, and honest requests waited --upload-wait for a 503). The body is
// read at --upload-min-rate as uploads are (guardUploads). 413 or 503
// naming --ingest-memory when the memory cannot be had; release gives it
// back.
func (s *Server) readAPIBody(c echo.Context) (body []byte, release func(), err error) {
	r := c.Request()
	tooLarge := httpError(http.StatusRequestEntityTooLarge, "the request body is over %s", humanBytes(maxAPIBody))
	if r.ContentLength > maxAPIBody {
		return nil, nil, tooLarge
	}
	var gives []func()
	release = func() {
		for _, g := range gives {
			g()
		}
	}
	// A byte beyond the bound finds a body that goes on; the server
	// ends a body at its Content-Length.
	bound := int64(maxAPIBody) + 1
	if r.ContentLength >= 0 {
		bound = r.ContentLength + 1
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= bound {
				release()
				return nil, nil, tooLarge
			}
			n := min(max(2*int64(cap(buf)), apiReadStep), bound)
			give, err := s.limits.Memory.TakeMore(r.Context(), apiBodyMemory*int64(cap(buf)), apiBodyMemory*(n-int64(cap(buf))), "symbolization request")
			if err != nil {
				release()
				return nil, nil, httpStatusError(err)
			}
			gives = append(gives, give)
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, release, nil
		}
		if err != nil {
			release()
			return nil, nil, httpError(http.StatusBadRequest, "reading the request body failed: %v", err)
		}
	}
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
	body, give, err := s.readAPIBody(c)
	if err != nil {
		return err
	}
	defer give()
	leave, err := s.apiTurn(c)
	if err != nil {
		return err
	}
	defer leave()
	var req symbolizeRequest
	if err := decodeAPIBody(body, &req); err != nil {
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

// decodeAPIBody decodes a JSON body (readAPIBody) into v.
func decodeAPIBody(body []byte, v any) error {
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
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
