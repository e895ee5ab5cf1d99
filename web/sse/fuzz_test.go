package sse

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseStream decodes a text/event-stream as the HTML standard's
// "interpret an event stream" says a browser does, returning the events
// dispatched (id, type, data).
func parseStream(s string) []Event {
	var out []Event
	var ev Event
	var data strings.Builder
	hasData := false
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<24)
	sc.Split(func(b []byte, atEOF bool) (int, []byte, error) {
		// Lines end with CRLF, LF or CR.
		for i, c := range b {
			if c == '\n' {
				return i + 1, b[:i], nil
			}
			if c == '\r' {
				if i+1 < len(b) {
					if b[i+1] == '\n' {
						return i + 2, b[:i], nil
					}
					return i + 1, b[:i], nil
				}
				if atEOF {
					return i + 1, b[:i], nil
				}
				return 0, nil, nil
			}
		}
		if atEOF && len(b) > 0 {
			return len(b), b, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if hasData {
				ev.Data = []byte(strings.TrimSuffix(data.String(), "\n"))
				out = append(out, ev)
			}
			ev, hasData = Event{ID: ev.ID}, false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.Contains(value, "\x00") {
				ev.ID = value
			}
		case "event":
			ev.Type = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		}
	}
	return out
}

// FuzzWrite checks that whatever a profile puts in an event (file names,
// build IDs, error text), Write encodes exactly one event that a browser
// decodes back to the same type and data, and that nothing can inject a
// field: go test -fuzz FuzzWrite ./web/sse
func FuzzWrite(f *testing.F) {
	f.Add("1", "binary", []byte(`{"file":"/usr/lib/libc.so.6","state":"fetching"}`), "keep-alive")
	f.Add("7\nid: 9", "x\r\nevent: evil", []byte("a\nb\r\nc\rd"), "x\n\ndata: injected")
	f.Add("", "", []byte(""), "")
	f.Add("\x00", "message", []byte("data: nested\n\n"), ":")
	f.Fuzz(func(t *testing.T, id, typ string, data []byte, comment string) {
		if !utf8.ValidString(id) || !utf8.ValidString(typ) || !utf8.Valid(data) {
			t.Skip() // events carry JSON, which is UTF-8
		}
		var b bytes.Buffer
		if err := WriteComment(&b, comment); err != nil {
			t.Fatal(err)
		}
		if err := Write(&b, Event{ID: id, Type: typ, Data: data}); err != nil {
			t.Fatal(err)
		}
		evs := parseStream(b.String())
		if len(evs) != 1 {
			t.Fatalf("%q decodes to %d events, want 1", b.String(), len(evs))
		}
		got := evs[0]
		wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		if string(got.Data) != wantData {
			t.Errorf("data %q, want %q (stream %q)", got.Data, wantData, b.String())
		}
		if wantType := clean(typ); typ != "" && got.Type != wantType {
			t.Errorf("type %q, want %q", got.Type, wantType)
		}
		if id != "" && !strings.Contains(id, "\x00") && got.ID != clean(id) {
			t.Errorf("id %q, want %q", got.ID, clean(id))
		}
	})
}
