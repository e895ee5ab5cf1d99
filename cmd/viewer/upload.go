package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/ingest"
	"viewer/web/ingest/perfdata"
)

// defaultServer is where viewer upload sends profiles unless --server or
// $VIEWER_SERVER says otherwise.
const defaultServer = "http://127.0.0.1:8080"

// runUpload sends a profile to a viewer server and prints its link.
func runUpload(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	fs.SetOutput(s.err)
	server := defaultServer
	if env := os.Getenv("VIEWER_SERVER"); env != "" {
		server = env
	}
	fs.StringVar(&server, "server", server, "viewer server `URL`: $VIEWER_SERVER when set")
	// The token's default is read after parsing so -h never prints it.
	token := fs.String("token", "", "upload `TOKEN` of a server started with --auth-token (default $VIEWER_TOKEN)")
	unwindOn := unwindFlag(fs)
	var debugDirs stringsFlag
	fs.Var(&debugDirs, "debug-dir", unwindDirsUsage)
	progress := addProgressFlag(fs)
	maps := addSourceMapFlags(fs) // sourcemaps.go
	seconds := fs.Int("seconds", 0, "for a URL argument: the profile's duration, set as its seconds= as go tool pprof -seconds does (0: the URL's own)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer upload FILE|URL [--server URL] [--token TOKEN] [--debug-dir DIR]... [--progress] [--seconds N]")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"upload: give exactly one FILE or URL"}
	}
	if *token == "" {
		*token = os.Getenv("VIEWER_TOKEN")
	}
	if isProfileURL(files[0]) {
		return uploadURL(ctx, strings.TrimRight(server, "/"), files[0], *seconds, strings.TrimSpace(*token), s, progress)
	}
	m := progress.meter(s.err)
	defer m.finish()
	var (
		name string
		body io.Reader
		size int64
	)
	if maps.enabled() {
		name, body, size, err = sourceMappedBody(files[0], maps, s.err)
	} else {
		name, body, size, err = uploadBody(files[0], *unwindOn, debugDirs, s.err, m)
	}
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if c, ok := body.(io.Closer); ok {
		defer c.Close()
	}
	r, err := upload(ctx, strings.TrimRight(server, "/"), name, body, size, strings.TrimSpace(*token), m)
	m.finish()
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	printWarnings(s.err, "", r.Warnings, r.WarningsOmitted, r.link)
	fmt.Fprintln(s.out, r.link)
	return nil
}

// uploadURL fetches the profile at raw (profileurl.go), as go tool pprof
// would, and uploads its bytes: this machine reaches the endpoint, the
// server need not (and never fetches a URL itself). The fetch is bounded
// by web.DefaultMaxUpload, the server's default --max-upload; a server
// with a smaller limit refuses the upload with its own reason.
func uploadURL(ctx context.Context, server, raw string, seconds int, token string, s stdio, progress *progressFlag) error {
	fp, err := fetchProfile(ctx, raw, seconds, web.DefaultMaxUpload, s.err)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	m := progress.meter(s.err)
	defer m.finish()
	r, err := upload(ctx, server, fp.name, bytes.NewReader(fp.data), int64(len(fp.data)), token, m)
	m.finish()
	if err != nil {
		return fmt.Errorf("upload: the %d bytes %s answered: %w", len(fp.data), fp.url, err)
	}
	printWarnings(s.err, "", r.Warnings, r.WarningsOmitted, r.link)
	fmt.Fprintln(s.out, r.link)
	return nil
}

// sourceMappedBody reads file here, maps its JavaScript frames through
// the source maps (sourcemaps.go) and returns it as pprof to send: the
// server never sees the scripts or maps.
func sourceMappedBody(file string, maps *sourceMapFlags, stderr io.Writer) (string, io.Reader, int64, error) {
	data, err := readBounded(file)
	if err != nil {
		return "", nil, 0, err
	}
	p, _, err := ingest.Parse(data, ingest.Limits{})
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: %w", file, err)
	}
	if err := maps.apply(p, stderr); err != nil {
		return "", nil, 0, err
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return "", nil, 0, err
	}
	return file + ".pb.gz", &buf, int64(buf.Len()), nil
}

// printWarnings prints a stored profile's warnings as the server lists
// them, one "warning: " line each (after prefix), and how many more its
// warnings.json (at link) counts.
func printWarnings(w io.Writer, prefix string, list []string, omitted int, link string) {
	for _, t := range list {
		fmt.Fprintf(w, "%swarning: %s\n", prefix, t)
	}
	if omitted > 0 {
		fmt.Fprintf(w, "%s%d more warnings not listed: the comments of %s/profile.pb.gz hold them all\n", prefix, omitted, link)
	}
}

// uploadBody opens what to send for file, and its size: the file itself,
// or, for a perf.data with --call-graph=dwarf samples, a pprof converted
// here with their user stacks unwound, since only this machine has the
// binaries the unwinder needs (the server would show those samples' leaf
// frames only). m shows the reading and the conversion.
func uploadBody(file string, unwindOn bool, debugDirs []string, stderr io.Writer, m *phaseMeter) (string, io.Reader, int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", nil, 0, err
	}
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	if !unwindOn || !perfdata.Sniff(head[:n]) {
		st, err := f.Stat()
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			f.Close()
			return "", nil, 0, err
		}
		return file, f, st.Size(), nil
	}
	f.Close()
	data, err := readMapped(file)
	if err != nil {
		return "", nil, 0, err
	}
	// Scan once, keeping the stack copies (slices of data), and convert
	// that same File only when it holds DWARF-mode samples.
	pf, err := perfdata.Scan(data, perfdata.Options{UserStacks: true, Progress: m.report})
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: %w", file, err)
	}
	if pf.UserRegsSamples == 0 {
		return file, bytes.NewReader(data), int64(len(data)), nil
	}
	p, err := perfdata.Convert(pf, perfdata.ConvertOptions{Binaries: localUnwinding(ingest.Limits{}, true, dirsLocator(debugDirs)).Binaries})
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: %w", file, err)
	}
	symbolize.CallSites(p) // as ingest.Parse would: the pprof sent holds call sites
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return "", nil, 0, err
	}
	m.finish()
	for _, c := range p.Comments { // its warnings are the server's to print, with the others
		if strings.HasPrefix(c, "perf.data: unwound ") {
			fmt.Fprintln(stderr, c)
		}
	}
	fmt.Fprintf(stderr, "sending %s as pprof converted here, with its --call-graph=dwarf stacks unwound (--unwind=false sends the perf.data as is)\n", file)
	return file + ".pb.gz", &buf, int64(buf.Len()), nil
}

// uploaded is what the server answered an upload: the profile's link and
// its warnings.
type uploaded struct {
	link            string
	Warnings        []string
	WarningsOmitted int
}

// upload streams body (of size bytes) to server's /api/profiles as
// multipart field "file" named name and returns the profile's full link
// and warnings; m shows the bytes sent, then the wait for the server's
// conversion.
func upload(ctx context.Context, server, name string, f io.Reader, size int64, token string, m *phaseMeter) (*uploaded, error) {
	form, contentType := multipartFile(name, &sentReader{r: f, m: m}, size, m)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/api/profiles", form)
	if err != nil {
		form.Close()
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w (is viewer serve running there? pass --server URL or set VIEWER_SERVER)", err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		ID, URL, Error  string
		Warnings        []string
		WarningsOmitted int
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s answered %s: %.200s", server, resp.Status, body)
	}
	if resp.StatusCode != http.StatusCreated {
		if r.Error == "" {
			r.Error = resp.Status
		}
		return nil, fmt.Errorf("%s: %s", name, r.Error)
	}
	return &uploaded{link: server + r.URL, Warnings: r.Warnings, WarningsOmitted: r.WarningsOmitted}, nil
}

// sentReader shows, once r is read to its end, that the server is
// converting what it was sent.
type sentReader struct {
	r io.Reader
	m *phaseMeter
}

func (s *sentReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.m.show("sent; the server is converting it", 0, 0, false)
	}
	return n, err
}
