// Package sse streams server-sent events (text/event-stream) from a
// per-topic broker: each topic (one profile's symbolization) keeps the latest
// event per key, so a late subscriber is first sent the current state, a
// reconnecting one (Last-Event-ID) only what changed since, and a slow one
// skips superseded progress instead of buffering it.
package sse

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	// ID is written as the "id:" field; the browser sends it back as
	// Last-Event-ID when it reconnects.
	ID string
	// Type is the "event:" field; empty means the default "message".
	Type string
	// Data is the payload, usually JSON. Newlines are split into several
	// "data:" lines as the format requires.
	Data []byte
}

// Write encodes e in the text/event-stream format.
func Write(w io.Writer, e Event) error {
	var b bytes.Buffer
	if e.ID != "" {
		fmt.Fprintf(&b, "id: %s\n", clean(e.ID))
	}
	if e.Type != "" {
		fmt.Fprintf(&b, "event: %s\n", clean(e.Type))
	}
	data := string(e.Data)
	data = strings.ReplaceAll(data, "\r\n", "\n")
	data = strings.ReplaceAll(data, "\r", "\n")
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// WriteComment writes a comment line, which clients ignore; it keeps idle
// connections (and the proxies between) from timing out.
func WriteComment(w io.Writer, text string) error {
	_, err := fmt.Fprintf(w, ": %s\n\n", clean(text))
	return err
}

// WriteRetry tells the client how many milliseconds to wait before
// reconnecting.
func WriteRetry(w io.Writer, ms int) error {
	_, err := fmt.Fprintf(w, "retry: %d\n\n", ms)
	return err
}

// clean removes line breaks from single-line fields so a value can never
// inject another field.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
