package browsertest_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/ingest"
	"viewer/web/webtest"
)

var updateScreens = flag.Bool("update", false, "rewrite testdata/screenshots (TestScreenshots)")

// tourPage is one page of the tour: every page a user meets.
type tourPage struct {
	name, path string
	ready      string // JS true once the page shows what it is for
}

// pageTour serves a viewer with a profile for every page: a pprof profile
// (flame, top, sandwich, source, and a diff against a second one), a
// perf.data with data types (types), a real recording with times,
// symbolized (the flame page, with its timeline: sorterSymbolized), and
// the upload page.
func pageTour(t *testing.T) (string, []tourPage) {
	t.Helper()
	dir := "../../testdata/datatype"
	typedData, err := os.ReadFile(filepath.Join(dir, "datatype-dw5-pie.perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	systemData := sorterSymbolized(t)
	s, err := web.New(web.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDataTypeEngine(symbolize.New(symbolize.Config{DebugDirs: []string{dir}})) // finds datatype-dw5-pie by its name and build ID
	ctx := context.Background()
	typed, err := s.Ingest(ctx, typedData, "datatype.perf.data")
	if err != nil {
		t.Fatal(err)
	}
	system, err := s.Ingest(ctx, systemData, "sorter-fp.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Start()
	t.Cleanup(ts.Close)
	a := webtest.PostProfile(t, ts.URL, "before.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 3)...))
	b := webtest.PostProfile(t, ts.URL, "after.pb.gz", webtest.StacksPB(t, "", nil, webtest.WideStacks(400, 5)...))
	drawn := `document.body.dataset.ready === '1'`
	return ts.URL, []tourPage{
		{"upload", "/", `document.readyState === 'complete'`},
		{"flame", "/p/" + system, drawn + ` && window.viewerTimeline && window.viewerTimeline.data && !document.getElementById('timeline').hidden`},
		{"top", "/p/" + a + "/top", drawn + ` && document.querySelectorAll('#top tbody tr').length > 10`},
		{"diff", "/p/" + a + "/diff/" + b, drawn + ` && document.querySelector('#diff-top tbody tr')`},
		{"sandwich", "/p/" + a + "/sandwich?fn=pkg.work3", drawn},
		{"source", "/p/" + a + "/source?fn=pkg.work3", `document.readyState === 'complete'`},
		{"types", "/p/" + typed + "/types", `document.querySelector('#types > tbody > tr')`},
	}
}

// sorterSymbolized is testdata/fidelity/sorter-fp.data (a real perf
// record -g of optimized C++ and the STL sorting strings, 591 samples)
// named from the binary beside it and this machine's libc debug info, as
// `viewer symbolize --debug-dir testdata/fidelity` writes it: the README's
// screenshots show a real, symbolized profile. The kernel's frames stay
// unnamed (no vmlinux is looked for).
func sorterSymbolized(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../../testdata/fidelity/sorter-fp.data")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ingest.Parse(data, ingest.Limits{NoUnwind: "frame-pointer recording"})
	if err != nil {
		t.Fatal(err)
	}
	sym := symbolize.New(symbolize.Config{DebugDirs: []string{"../../testdata/fidelity"}, IgnoreVmlinux: true})
	if _, err := sym.Symbolize(context.Background(), p, symbolize.Options{}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// emulate sets the viewport to w×h CSS px, as a phone when mobile.
func emulate(t *testing.T, b *strictBrowser, w, h int64, mobile bool) {
	t.Helper()
	run(t, b.Browser, fmt.Sprintf("viewport %dx%d", w, h), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: w, Height: h, DeviceScaleFactor: 1, Mobile: mobile})
		return err
	}))
}

func openTour(t *testing.T, b *strictBrowser, base string, p tourPage) {
	t.Helper()
	run(t, b.Browser, "open the "+p.name+" page", chromedp.Navigate(base+p.path))
	waitForJS(t, b.Browser, "the "+p.name+" page", p.ready)
	// Fonts and late layout (the top table's pages, the timeline).
	time.Sleep(200 * time.Millisecond)
}

// over is overflowJS's answer: the viewport's width, the page's, and the
// widest elements that stick out of the viewport unclipped.
type over struct {
	Width, Scroll float64
	Wide          []string
}

// overflowJS measures whether the page scrolls sideways (over).
const overflowJS = `(() => {
	const vw = document.documentElement.clientWidth;
	const wide = [];
	for (const el of document.querySelectorAll('body *')) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.right <= vw + 1) continue;
		// Inside a scrolling box, it scrolls there, not the page.
		let p = el.parentElement, clipped = false;
		for (; p && p !== document.body; p = p.parentElement) {
			const ox = getComputedStyle(p).overflowX;
			if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') { clipped = true; break; }
		}
		if (!clipped) wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') + ' right=' + Math.round(r.right));
	}
	return { Width: vw, Scroll: document.documentElement.scrollWidth, Wide: wide.slice(0, 8) };
})()`

// headerFitJS lists the site header's links that a user cannot see whole
// without scrolling the header: cut by the window's edge or by the nav's
// own box (which scrolls sideways when its links do not fit).
const headerFitJS = `(() => {
	const vw = document.documentElement.clientWidth;
	const nav = document.querySelector('header.site .site-nav');
	const box = nav ? nav.getBoundingClientRect() : { left: 0, right: vw };
	const cut = [];
	for (const a of document.querySelectorAll('header.site a')) {
		const r = a.getBoundingClientRect();
		const inNav = nav && nav.contains(a);
		if (r.left < -0.5 || r.right > vw + 0.5 || (inNav && (r.left < box.left - 0.5 || r.right > box.right + 0.5)))
			cut.push(a.textContent.trim() + ' x=' + Math.round(r.left) + '..' + Math.round(r.right));
	}
	if (nav && nav.scrollWidth > nav.clientWidth + 1) cut.push('the nav scrolls: ' + nav.scrollWidth + ' px of links in ' + nav.clientWidth);
	return cut;
})()`

// TestBrowserPhoneWidth opens every page but the flame graph's at 390×844
// (a phone, emulated as mobile) and fails when the page scrolls sideways,
// naming the widest elements; on the data-type page, type names must get
// a column wide enough to read (not one character per line). On every
// page, the flame graph's and the time-order view's included, each link
// of the site header shows whole (issue 34: with "Time order" the links
// of a profile's pages no longer fit and the last ones hid in the nav's
// sideways scroll).
func TestBrowserPhoneWidth(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	base, pages := pageTour(t)
	for _, p := range pages {
		if p.name == "flame" {
			pages = append(pages, tourPage{"time order", p.path + "/time", `document.body.dataset.ready === '1'`})
		}
	}
	b := startStrict(t)
	emulate(t, b, 390, 844, true)
	for _, p := range pages {
		if p.name == "flame" {
			// The flame graph's own layout is issue 22's other half: its
			// header only.
			openTour(t, b, base, p)
			if cut := eval[[]string](t, b.Browser, headerFitJS); len(cut) > 0 {
				t.Errorf("%s at 390 px: header links not shown whole: %q", p.name, cut)
			}
			b.check(t, p.name+" at 390 px")
			continue
		}
		openTour(t, b, base, p)
		if cut := eval[[]string](t, b.Browser, headerFitJS); len(cut) > 0 {
			t.Errorf("%s at 390 px: header links not shown whole: %q", p.name, cut)
		}
		o := eval[over](t, b.Browser, overflowJS)
		if o.Scroll > o.Width+1 {
			t.Errorf("%s at 390 px: the page is %v px wide (viewport %v): %s", p.name, o.Scroll, o.Width, strings.Join(o.Wide, "; "))
		}
		if p.name == "types" {
			narrow := eval[[]string](t, b.Browser, `Array.from(document.querySelectorAll('#types td.type-cell')).filter((td) => td.getBoundingClientRect().width < 96).map((td) => td.textContent.trim().slice(0, 40) + ' ' + Math.round(td.getBoundingClientRect().width) + 'px')`)
			if len(narrow) > 0 {
				t.Errorf("types at 390 px: type names squeezed under 96 px: %q", narrow)
			}
		}
		b.check(t, p.name+" at 390 px")
	}
}

// contrastJS lists the text on the page whose color against its
// background is under WCAG 2 AA (4.5:1, or 3:1 for large text: 24 px, or
// 18.66 px bold), with the relative luminance formula of WCAG 2.1. The
// background is the first opaque one up the tree, alpha-composited over
// what is below it. Disabled controls are exempt, as WCAG exempts inactive
// components; placeholders count.
const contrastJS = `(() => {
	const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return [0, 0, 0, 0]; const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
	const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]); };
	const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
	const bg = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const c = parse(getComputedStyle(e).backgroundColor);
			if (c[3] > 0) layers.push(c);
			if (c[3] >= 1) break;
		}
		let out = [255, 255, 255, 1];
		for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
		return out;
	};
	const bad = [];
	const check = (el, color, what) => {
		const cs = getComputedStyle(el);
		const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
		const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
		const b = bg(el);
		let fg = parse(color);
		fg = over([fg[0], fg[1], fg[2], fg[3] * Number(cs.opacity)], b);
		const r = ratio(fg, b);
		if (r < need - 0.005) bad.push(what.slice(0, 50) + ' (' + el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '') + '): ' + r.toFixed(2) + ':1, needs ' + need);
	};
	for (const el of document.querySelectorAll('body *')) {
		if (el.closest('[hidden], svg, canvas, noscript, :disabled, [aria-disabled=true], .visually-hidden')) continue;
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) continue;
		const cs = getComputedStyle(el);
		if (cs.visibility === 'hidden' || Number(cs.opacity) === 0) continue;
		const own = Array.from(el.childNodes).filter((n) => n.nodeType === 3 && n.textContent.trim()).map((n) => n.textContent.trim()).join(' ');
		if (own) check(el, cs.color, own);
		if ((el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') && el.placeholder && !el.value) check(el, getComputedStyle(el, '::placeholder').color, 'placeholder ' + el.placeholder);
	}
	return bad;
})()`

// TestBrowserContrast checks every page, the flame graph's included, at
// 1440×900 and at 390×844, for text under WCAG AA contrast (contrastJS),
// including the flame page's symbolization panel, timeline and tooltip
// once shown.
func TestBrowserContrast(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	base, pages := pageTour(t)
	b := startStrict(t)
	for _, vp := range [][3]int64{{1440, 900, 0}, {390, 844, 1}} {
		emulate(t, b, vp[0], vp[1], vp[2] == 1)
		for _, p := range pages {
			openTour(t, b, base, p)
			if p.name == "top" {
				// The search box's "no match" and the pages' buttons.
				run(t, b.Browser, "search", chromedp.SendKeys(chromedp.CSS("#top-search"), "work1"))
			}
			for _, bad := range eval[[]string](t, b.Browser, contrastJS) {
				t.Errorf("%s at %d px: %s", p.name, vp[0], bad)
			}
		}
	}
}

// TestScreenshots renders every page at 1440×900 and at 390×844 (a phone)
// and compares them with testdata/screenshots, which the README shows:
// each must exist and have the page's size. With -update it rewrites
// them:
//
//	cd web/browsertest && go test -run TestScreenshots -update .
func TestScreenshots(t *testing.T) {
	if testing.Short() {
		t.Skip("chromium test")
	}
	base, pages := pageTour(t)
	b := startStrict(t)
	dir := filepath.Join("..", "..", "testdata", "screenshots")
	if *updateScreens {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, vp := range []struct {
		name   string
		w, h   int64
		mobile bool
	}{{"1440", 1440, 900, false}, {"390", 390, 844, true}} {
		emulate(t, b, vp.w, vp.h, vp.mobile)
		for _, p := range pages {
			openTour(t, b, base, p)
			file := filepath.Join(dir, p.name+"-"+vp.name+".png")
			if !*updateScreens {
				f, err := os.Open(file)
				if err != nil {
					t.Errorf("%s: %v: regenerate with go test -run TestScreenshots -update . in web/browsertest", p.name, err)
					continue
				}
				cfg, err := png.DecodeConfig(f)
				f.Close()
				if err != nil || int64(cfg.Width) != vp.w || int64(cfg.Height) != vp.h {
					t.Errorf("%s is %dx%d (%v), want %dx%d: regenerate with go test -run TestScreenshots -update . in web/browsertest", file, cfg.Width, cfg.Height, err, vp.w, vp.h)
				}
				continue
			}
			shot, err := b.ViewportPNG()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, shot, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !*updateScreens {
		// The README shows each.
		readme, err := os.ReadFile("../../README.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			for _, w := range []string{"1440", "390"} {
				if f := "testdata/screenshots/" + p.name + "-" + w + ".png"; !strings.Contains(string(readme), f) {
					t.Errorf("README.md does not show %s", f)
				}
			}
		}
	}
}
