package flame

import (
	"bufio"
	"hash/fnv"
	"io"
	"strconv"
	"strings"

	"viewer/symbolize/sampling"
)

// SVG layout, in pixels.
const (
	svgWidth   = 1200
	svgRow     = 17
	svgPad     = 10
	svgHeader  = 34
	svgCharPx  = 7 // approximate width of one 12px monospace character
	svgMinText = 3 // characters worth drawing ("ab…")
)

// SVGMinFraction is the compaction to build a tree for WriteSVG with:
// frames under one pixel at the SVG's width are merged.
const SVGMinFraction = 1.0 / (svgWidth - 2*svgPad)

var svgEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// WriteSVG writes t as a standalone SVG flamegraph (root at the bottom),
// each frame with a <title> tooltip giving its name, total and self value.
// Every name is escaped. title names what the graph shows.
func (t *Tree) WriteSVG(w io.Writer, title string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	maxDepth := int32(0)
	for _, n := range t.Nodes {
		maxDepth = max(maxDepth, n.Depth)
	}
	height := svgHeader + int(maxDepth+1)*svgRow + svgPad
	inner := float64(svgWidth - 2*svgPad)
	total := t.Total()
	scale := 0.0
	if total != 0 {
		scale = inner / float64(abs(total))
	}
	ws := func(s ...string) {
		for _, x := range s {
			bw.WriteString(x)
		}
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	ws(`<?xml version="1.0" encoding="UTF-8"?>`, "\n",
		`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="`, strconv.Itoa(svgWidth),
		`" height="`, strconv.Itoa(height), `" viewBox="0 0 `, strconv.Itoa(svgWidth), " ", strconv.Itoa(height),
		`" font-family="monospace" font-size="12">`, "\n",
		`<rect width="100%" height="100%" fill="#fdfdf8"/>`, "\n",
		`<text x="`, strconv.Itoa(svgPad), `" y="22" font-size="15">`, svgEscaper.Replace(title),
		` — total `, svgEscaper.Replace(sampling.FormatValue(total, t.Unit)), "</text>\n")
	// next[d] is the x (in value units) where the next node at depth d goes.
	next := make([]int64, maxDepth+2)
	for _, n := range t.Nodes {
		x0 := next[n.Depth]
		next[n.Depth] += abs(n.Total)
		next[n.Depth+1] = x0
		wpx := float64(abs(n.Total)) * scale
		if wpx < 0.1 {
			continue
		}
		x := svgPad + float64(x0)*scale
		y := height - svgPad - int(n.Depth+1)*svgRow
		name := t.Names[n.Name]
		ws(`<g><title>`, svgEscaper.Replace(name), " (", svgEscaper.Replace(sampling.FormatValue(n.Total, t.Unit)), ", ",
			sampling.Percent(n.Total, total), "; self ", svgEscaper.Replace(sampling.FormatValue(n.Self, t.Unit)), ")</title>",
			`<rect x="`, ff(x), `" y="`, strconv.Itoa(y), `" width="`, ff(wpx), `" height="`, strconv.Itoa(svgRow-1),
			`" rx="2" fill="`, color(name), `"/>`)
		if chars := int(wpx-4) / svgCharPx; chars >= svgMinText {
			label := name
			if r := []rune(name); len(r) > chars {
				label = string(r[:chars-1]) + "…"
			}
			ws(`<text x="`, ff(x+2), `" y="`, strconv.Itoa(y+12), `">`, svgEscaper.Replace(label), `</text>`)
		}
		ws("</g>\n")
	}
	ws("</svg>\n")
	return bw.Flush()
}

// color picks a stable warm color for a name; merged frames are grey.
func color(name string) string {
	if name == MergedName {
		return "#c8c8c8"
	}
	if name == RootName {
		return "#e0a070"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	r := 205 + v%50
	g := 80 + (v>>8)%150
	b := 40 + (v>>16)%50
	return "rgb(" + strconv.Itoa(int(r)) + "," + strconv.Itoa(int(g)) + "," + strconv.Itoa(int(b)) + ")"
}
