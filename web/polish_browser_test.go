package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
)

// topHeaderJS measures the /top table's sticky header against its scroll
// container (the nearest ancestor that scrolls, or the viewport) and the
// rows: which rows it hides (a row below the header's height from the
// container's top whose middle point hits the header rather than the row).
const topHeaderJS = `(() => {
	const th = document.querySelector('#top thead th');
	let box = th.parentElement;
	for (; box && box !== document.body; box = box.parentElement) {
		const cs = getComputedStyle(box);
		if (/(auto|scroll|hidden)/.test(cs.overflowY + cs.overflowX)) break;
	}
	const view = box && box !== document.body ? box.getBoundingClientRect() : { top: 0, bottom: innerHeight };
	const h = th.getBoundingClientRect();
	const covered = [];
	const rows = [...document.querySelectorAll('#top tbody tr')].filter((r) => !r.hidden);
	rows.forEach((r, i) => {
		const b = r.getBoundingClientRect();
		const y = (b.top + b.bottom) / 2;
		if (b.top < Math.max(view.top, 0) + h.height - 0.5 || y > Math.min(view.bottom, innerHeight) || y < 0) return;
		const hit = document.elementFromPoint(b.left + b.width / 2, y);
		if (!hit || !r.contains(hit)) covered.push(i + 1);
	});
	return { headTop: h.top, headBottom: h.bottom, boxTop: Math.max(view.top, 0), covered, firstRowTop: rows[0].getBoundingClientRect().top, scrolls: box !== document.body && box.scrollHeight > box.clientHeight + 1 };
})()`

type topHeader struct {
	HeadTop     float64 `json:"headTop"`
	HeadBottom  float64 `json:"headBottom"`
	BoxTop      float64 `json:"boxTop"`
	Covered     []int   `json:"covered"`
	FirstRowTop float64 `json:"firstRowTop"`
	Scrolls     bool    `json:"scrolls"`
}

// TestBrowserTopStickyHeader opens /p/ID/top at 1440×900 (issue 34: the
// header sat 96 px below the top of its scroll box, over rows 3–4): the
// header is at the top of its scroll container and hides no row, before
// and after the table is scrolled.
func TestBrowserTopStickyHeader(t *testing.T) {
	base := startServer(t)
	id := postProfile(t, base, "wide.pb.gz", stacksPB(t, "", nil, wideStacks(400, 3)...))
	b := browsertest.Start(t, browsertest.Options{Width: 1440, Height: 900})
	run(t, b, "open the top page", chromedp.Navigate(base+"/p/"+id+"/top"))
	waitFor(t, b, "the top table", `document.body.dataset.ready === '1' && document.querySelectorAll('#top tbody tr').length > 50`)
	time.Sleep(100 * time.Millisecond)
	check := func(when string) topHeader {
		t.Helper()
		h := eval[topHeader](t, b, topHeaderJS)
		if d := h.HeadTop - h.BoxTop; d > 1 || d < -1 {
			t.Errorf("%s: the header's top is at y=%.0f, %.0f px below the top of its scroll box (y=%.0f)", when, h.HeadTop, d, h.BoxTop)
		}
		if len(h.Covered) > 0 {
			t.Errorf("%s: the header (y=%.0f–%.0f) hides rows %v", when, h.HeadTop, h.HeadBottom, h.Covered)
		}
		return h
	}
	h := check("before scrolling")
	if h.FirstRowTop < h.HeadBottom-1 {
		t.Errorf("before scrolling the first row (y=%.0f) starts under the header (bottom y=%.0f)", h.FirstRowTop, h.HeadBottom)
	}
	// Scroll as a user would: the wheel over the table, 600 px.
	run(t, b, "scroll the table", chromedp.Evaluate[chromedp.Void](`(() => {
		const r = document.querySelector('#top tbody tr:nth-child(8)').getBoundingClientRect();
		window.__wheelAt = [r.left + 200, r.top];
	})()`))
	at := eval[[]float64](t, b, `window.__wheelAt`)
	run(t, b, "wheel", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, at[0], at[1], func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1e-9, 600 }))
	time.Sleep(400 * time.Millisecond)
	after := check("after scrolling 600 px")
	if after.FirstRowTop >= h.FirstRowTop-100 {
		t.Errorf("the wheel did not scroll the table: first row at y=%.0f, was %.0f", after.FirstRowTop, h.FirstRowTop)
	}
	b.Screenshot(t, "top-sticky-header")
	noProblems(t, b)
}
