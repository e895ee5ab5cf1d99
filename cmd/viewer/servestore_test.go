package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"viewer/web/store/storetest"
)

// TestServeStoreTwoReplicas runs `viewer serve --store s3://…` twice on
// one bucket of a real S3 server: the profile a replica loads from a FILE
// argument is served by the other, and survives both being restarted.
func TestServeStoreTwoReplicas(t *testing.T) {
	s3 := storetest.NewS3(t)
	tmp := t.TempDir()
	file := writeTestProfile(t, tmp)

	a, outA, stopA := startServe(t, "--store", s3.URL, "--replica-id", "web1", file)
	if !strings.Contains(outA.String(), "profiles in s3://profiles") || strings.Contains(outA.String(), "endpoint=") {
		t.Errorf("serve should name the bucket without its query: %q", outA.String())
	}
	m := waitForOutput(t, outA, regexp.MustCompile(`http://\S+/p/([a-z2-7]{20})\t`))
	id := m[1]
	b, _, stopB := startServe(t, "--store", s3.URL, "--replica-id", "web2")
	for _, base := range []string{a, b} {
		if code, body := fetch(t, base+"/p/"+id+"/flame.json"); code != 200 || !strings.Contains(body, `"main.hot"`) {
			t.Fatalf("%s flame.json: %d %.200s", base, code, body)
		}
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	c, _, _ := startServe(t, "--store", s3.URL)
	if code, body := fetch(t, c+"/p/"+id); code != 200 || !strings.Contains(body, id) {
		t.Fatalf("after restarting: %d", code)
	}
}

// TestServeStoreErrors: a --store that cannot work stops serve at start-up
// with a message saying why.
func TestServeStoreErrors(t *testing.T) {
	s3 := storetest.NewS3(t)
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"--store", "/var/lib/viewer"}, "not a URL", false},
		{[]string{"--store", "ftp://host/x"}, `scheme "ftp" is not supported`, false},
		{[]string{"--store", strings.Replace(s3.URL, "s3://profiles", "s3://no-such-bucket", 1)}, "object store unavailable", false},
		{[]string{"--replica-id", "x"}, "--replica-id needs --store", true},
		{[]string{"--store", s3.URL, "--takeover-after", "0s"}, "--takeover-after must be positive", true},
	} {
		err := runServe(context.Background(), append([]string{"--addr", "127.0.0.1:0"}, tc.args...), stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard})
		var u usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &u) != tc.usage {
			t.Errorf("serve %q = %v; want an error containing %q (usage error: %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}

// TestServeStoreGCS runs `viewer serve --store gs://profiles` twice on the
// GCS fake (the default build's gs:// driver, reached the way the Cloud
// Storage client reaches an emulator): the profile one replica loaded is
// served by the other, from the objects the fake holds.
func TestServeStoreGCS(t *testing.T) {
	g := storetest.NewGCS(t)
	file := writeTestProfile(t, t.TempDir())
	a, outA, _ := startServe(t, "--store", g.URL, "--replica-id", "web1", file)
	if !strings.Contains(outA.String(), "profiles in gs://profiles") {
		t.Errorf("serve should name the bucket: %q", outA.String())
	}
	id := waitForOutput(t, outA, regexp.MustCompile(`http://\S+/p/([a-z2-7]{20})\t`))[1]
	b, _, _ := startServe(t, "--store", g.URL, "--replica-id", "web2")
	for _, base := range []string{a, b} {
		if code, body := fetch(t, base+"/p/"+id+"/flame.json"); code != 200 || !strings.Contains(body, `"main.hot"`) {
			t.Fatalf("%s flame.json: %d %.200s", base, code, body)
		}
	}
	if _, ok := g.Object(".viewer-check"); !ok {
		t.Error("serve did not check the bucket at start-up (.viewer-check)")
	}
	err := runServe(context.Background(), []string{"--addr", "127.0.0.1:0", "--store", "gs://no-such-bucket"}, stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "bucket does not exist") {
		t.Errorf("serve --store gs://no-such-bucket = %v; want the bucket does not exist", err)
	}
}
