package views

import (
	"net/http"
	"strconv"
)

// ftoa formats a number for an attribute (bar widths, sort keys).
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func clamp01(f float64) float64 {
	switch {
	case f < 0 || f != f:
		return 0
	case f > 1:
		return 1
	}
	return f
}

// statusTitle is the heading of the error page for an HTTP status.
func statusTitle(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusBadRequest:
		return "That upload could not be read"
	case http.StatusRequestEntityTooLarge:
		return "Too large"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Something went wrong"
}
