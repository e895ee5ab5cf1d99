package jsonprof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decoder reads one JSON document token by token, as a stream: it holds
// the token or value being read, not the document.
type decoder struct {
	*jsontext.Decoder
}

func newDecoder(r io.Reader) decoder {
	// Duplicate names are allowed (the last wins, as JavaScript's
	// JSON.parse has it) and invalid UTF-8 is kept as it is: browsers
	// write both.
	return decoder{jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
}

// errAt wraps err with where in the input it happened.
func (d decoder) errAt(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the JSON ends early, at byte %d (was the file cut short?)", d.InputOffset())
	}
	return fmt.Errorf("at byte %d: %w", d.InputOffset(), err)
}

// object reads an object, calling fn with each name; fn reads the value.
func (d decoder) object(fn func(name string) error) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != '{' {
		return fmt.Errorf("at byte %d: want an object, not %s", d.InputOffset(), kindName(t.Kind()))
	}
	for d.PeekKind() != '}' {
		t, err := d.ReadToken()
		if err != nil {
			return err
		}
		if err := fn(t.String()); err != nil {
			return err
		}
	}
	_, err = d.ReadToken()
	return err
}

// array reads an array, calling fn for each element; fn reads it.
func (d decoder) array(fn func() error) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != '[' {
		return fmt.Errorf("at byte %d: want an array, not %s", d.InputOffset(), kindName(t.Kind()))
	}
	for d.PeekKind() != ']' {
		if d.PeekKind() == 0 {
			_, err := d.ReadToken()
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	_, err = d.ReadToken()
	return err
}

// number reads a number, or a string holding one (trace events write
// some as strings); null is 0.
func (d decoder) number() (float64, error) {
	t, err := d.ReadToken()
	if err != nil {
		return 0, err
	}
	switch t.Kind() {
	case '0':
		return t.Float(), nil
	case '"':
		f, err := strconv.ParseFloat(t.String(), 64)
		if err != nil {
			return 0, fmt.Errorf("at byte %d: %q is not a number", d.InputOffset(), t.String())
		}
		return f, nil
	case 'n':
		return 0, nil
	}
	return 0, fmt.Errorf("at byte %d: want a number, not %s", d.InputOffset(), kindName(t.Kind()))
}

// int reads a number as an integer (truncated toward zero). A number
// token is read as one without going through a float: most of a V8
// profile is its samples' node IDs and time deltas.
func (d decoder) int() (int64, error) {
	if d.PeekKind() == '0' {
		t, err := d.ReadToken()
		if err != nil {
			return 0, err
		}
		if v := t.Int(); v >= -1<<62 && v <= 1<<62 {
			return v, nil
		}
		return 0, fmt.Errorf("at byte %d: %s is out of range", d.InputOffset(), t.String())
	}
	f, err := d.number()
	if err != nil {
		return 0, err
	}
	if math.IsNaN(f) || math.Abs(f) > 1<<62 {
		return 0, fmt.Errorf("at byte %d: %v is out of range", d.InputOffset(), f)
	}
	return int64(f), nil
}

// string reads a string; null and other scalars read as their text.
func (d decoder) string() (string, error) {
	t, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	switch t.Kind() {
	case '"', '0':
		return t.String(), nil
	case 'n':
		return "", nil
	case 't', 'f':
		return t.String(), nil
	}
	return "", fmt.Errorf("at byte %d: want a string, not %s", d.InputOffset(), kindName(t.Kind()))
}

// ints reads an array of integers into dst.
func (d decoder) ints(dst []int64) ([]int64, error) {
	err := d.array(func() error {
		v, err := d.int()
		dst = append(dst, v)
		return err
	})
	return dst, err
}

// value decodes the next value into v (a small part of the input: one
// frame, one event).
func (d decoder) value(v any) error {
	return json.UnmarshalDecode(d.Decoder, v, json.RejectUnknownMembers(false))
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the end"
}

// flexNumber is a JSON number that may be written as a string.
type flexNumber float64

func (n *flexNumber) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		b = b[1 : len(b)-1]
	}
	if string(b) == "null" || len(b) == 0 {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", b)
	}
	*n = flexNumber(f)
	return nil
}
