package browsertest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// modulesJS is what a page loaded of /static/*.js, by the browser's own
// resource timing: its entry modules (the <script type="module"> tags),
// the modules it asked to preload, and every module it fetched.
const modulesJS = `(() => {
	const path = (u) => new URL(u, location.href).pathname;
	return {
		entries: [...document.querySelectorAll('script[type=module][src]')].map((s) => path(s.src)),
		preloads: [...document.querySelectorAll('link[rel=modulepreload]')].map((l) => path(l.href)),
		loaded: [...new Set(performance.getEntriesByType('resource').map((e) => path(e.name)).filter((p) => /^\/static\/.*\.js$/.test(p)))],
	};
})()`

type pageModules struct {
	Entries  []string `json:"entries"`
	Preloads []string `json:"preloads"`
	Loaded   []string `json:"loaded"`
}

// TestBrowserModulePreload opens every page of the tour and the time-order
// page with the browser's cache off (issue 34: the flame page's imports
// arrived one level after the other, ≈250 ms before the first draw): every
// module a page fetched that is not one of its entry scripts, that is every
// module its entries import at any depth, has a <link rel="modulepreload">
// on the page, so the browser fetches them all at once; the flame page
// preloads flame.js, common.js and names.js (page.js's imports and theirs).
func TestBrowserModulePreload(t *testing.T) {
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
	run(t, b.Browser, "turn the cache off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
		return err
	}))
	for _, p := range pages {
		openTour(t, b, base, p)
		m := eval[pageModules](t, b.Browser, modulesJS)
		if len(m.Entries) == 0 && p.name != "source" { // the source page has no script
			t.Errorf("%s: no module scripts on the page", p.name)
		}
		for _, l := range m.Loaded {
			if !slices.Contains(m.Entries, l) && !slices.Contains(m.Preloads, l) {
				t.Errorf("%s: fetched %s, which its entries (%s) import, without a modulepreload link (it has %q)", p.name, l, strings.Join(m.Entries, ", "), m.Preloads)
			}
		}
		for _, l := range m.Preloads {
			if slices.Contains(m.Entries, l) {
				t.Errorf("%s: preloads its entry %s", p.name, l)
			}
		}
		if p.name == "flame" {
			for _, want := range []string{"/static/flame.js", "/static/common.js", "/static/names.js"} {
				if !slices.Contains(m.Preloads, want) {
					t.Errorf("flame page: no modulepreload of %s (preloads %q)", want, m.Preloads)
				}
			}
		}
		b.check(t, p.name)
	}
}
