package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"viewer/symbolize/debuginfod"
)

// runUploadDebuginfo sends ELF files (executables, libraries, .debug files)
// to a viewer server, which stores each under its build ID and serves it
// over debuginfod; --sources adds a tarball of their source files.
func runUploadDebuginfo(ctx context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("upload-debuginfo", flag.ContinueOnError)
	fs.SetOutput(s.err)
	server := defaultServer
	if env := os.Getenv("VIEWER_SERVER"); env != "" {
		server = env
	}
	fs.StringVar(&server, "server", server, "viewer server `URL`: $VIEWER_SERVER when set")
	token := fs.String("token", "", "upload `TOKEN` of a server started with --auth-token (default $VIEWER_TOKEN)")
	sources := fs.String("sources", "", "a tar `FILE` (.tar, .tar.gz, .tar.zst) of the source files, by absolute path as the DWARF names them (tar -C / -czf src.tar.gz home/me/app), stored for each FILE's build ID")
	progress := addProgressFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer upload-debuginfo FILE... [--sources SRC.tar.gz] [--server URL] [--token TOKEN] [--progress]")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{"upload-debuginfo: give one or more ELF FILEs"}
	}
	if *token == "" {
		*token = os.Getenv("VIEWER_TOKEN")
	}
	server = strings.TrimRight(server, "/")
	tok := strings.TrimSpace(*token)
	m := progress.meter(s.err)
	defer m.finish()
	failed := 0
	done := map[string]bool{}
	for _, file := range files {
		bid, err := debuginfod.FileBuildID(file)
		if err != nil {
			fmt.Fprintf(s.err, "viewer: %v: not uploaded\n", err)
			failed++
			continue
		}
		stored, err := uploadDebugFile(ctx, server, file, tok, m)
		m.finish()
		if err != nil {
			fmt.Fprintf(s.err, "viewer: %s: %v\n", file, err)
			failed++
			continue
		}
		fmt.Fprintf(s.out, "%s\t%s\t%s\n", file, bid, strings.Join(stored, ","))
		if *sources != "" && !done[bid] {
			done[bid] = true
			n, err := uploadSources(ctx, server, bid, *sources, tok)
			if err != nil {
				fmt.Fprintf(s.err, "viewer: %s: %v\n", *sources, err)
				failed++
				continue
			}
			fmt.Fprintf(s.out, "%s\t%s\t%d source files\n", *sources, bid, n)
		}
	}
	if failed > 0 {
		return fmt.Errorf("upload-debuginfo: %d of %d files not stored", failed, len(files))
	}
	return nil
}

// uploadDebugFile streams file to /api/debuginfo and returns the kinds the
// server stored it as; m shows the bytes sent.
func uploadDebugFile(ctx context.Context, server, file, token string, m *phaseMeter) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	body, contentType := multipartFile(file, f, size, m)
	defer body.Close()
	var reply struct {
		Results []struct {
			Stored []struct {
				Kind string `json:"kind"`
			} `json:"stored"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := debuginfoRequest(ctx, http.MethodPost, server+"/api/debuginfo", contentType, body, token, &reply); err != nil {
		return nil, err
	}
	if len(reply.Results) != 1 {
		return nil, fmt.Errorf("the server answered %d results for one file", len(reply.Results))
	}
	if e := reply.Results[0].Error; e != "" {
		return nil, fmt.Errorf("refused: %s", e)
	}
	var kinds []string
	for _, st := range reply.Results[0].Stored {
		kinds = append(kinds, st.Kind)
	}
	return kinds, nil
}

// uploadSources sends a source tarball for bid with PUT /buildid/BID/sources.
func uploadSources(ctx context.Context, server, bid, tarball, token string) (int, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var reply struct {
		Sources int `json:"sources"`
	}
	u := server + "/buildid/" + bid + "/sources?name=" + url.QueryEscape(filepath.Base(tarball))
	err = debuginfoRequest(ctx, http.MethodPut, u, "application/octet-stream", f, token, &reply)
	return reply.Sources, err
}

// debuginfoRequest sends one upload and decodes its JSON reply; an error
// carries the server's own message.
func debuginfoRequest(ctx context.Context, method, u, contentType string, body io.Reader, token string, reply any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusUnprocessableEntity, http.StatusMultiStatus, http.StatusConflict, http.StatusInsufficientStorage:
		if json.Unmarshal(b, reply) == nil {
			return nil // per-file errors are in the reply
		}
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(b))
		var je struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &je) == nil && je.Error != "" {
			msg = je.Error
		}
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	return json.Unmarshal(b, reply)
}
