package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: viewer upload FILE [--server URL] [--token TOKEN]")
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"upload: give exactly one FILE"}
	}
	if *token == "" {
		*token = os.Getenv("VIEWER_TOKEN")
	}
	link, err := upload(ctx, strings.TrimRight(server, "/"), files[0], strings.TrimSpace(*token))
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	fmt.Fprintln(s.out, link)
	return nil
}

// upload streams name to server's /api/profiles as multipart field "file"
// and returns the profile's full link.
func upload(ctx context.Context, server, name, token string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", filepath.Base(name))
		if err == nil {
			_, err = io.Copy(fw, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/api/profiles", pr)
	if err != nil {
		pr.Close()
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("%w (is viewer serve running there? pass --server URL or set VIEWER_SERVER)", err)
		}
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	var r struct {
		ID, URL, Error string
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("%s answered %s: %.200s", server, resp.Status, body)
	}
	if resp.StatusCode != http.StatusCreated {
		if r.Error == "" {
			r.Error = resp.Status
		}
		return "", fmt.Errorf("%s: %s", name, r.Error)
	}
	return server + r.URL, nil
}
