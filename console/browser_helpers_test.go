package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testbrowser"

	"github.com/overtake/overtake/internal/testredis"
)

// Environment of the browser tests.
const (
	// envScreenshots is a directory: when set, TestBrowserScreenshots
	// writes the README's screenshots there (scripts/console-screenshots.sh).
	envScreenshots = "OVERTAKE_CONSOLE_SCREENSHOTS"
)

// chromium returns the Chromium binary, skipping the test without one.
func chromium(t *testing.T) string { return testbrowser.Chromium(t) }

// realRedis returns the real Redis backend, skipping the test without one:
// the browser tests run against a real Redis only.
func realRedis(t *testing.T) *testredis.Backend {
	t.Helper()
	for _, b := range testredis.Backends(t) {
		if !b.IsMini() {
			return &b
		}
	}
	t.Skip("browser test skipped: no real Redis (install redis-server, or set " + testredis.EnvRedisAddr + ")")
	return nil
}

// newBrowser starts headless Chromium for the test (see testbrowser.New);
// aliases are further names that resolve to 127.0.0.1.
func newBrowser(t *testing.T, path string, aliases ...string) context.Context {
	return testbrowser.New(t, path, aliases...)
}

// browse runs steps with a bound, naming what failed.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	testbrowser.Do(t, ctx, 20*time.Second, what, steps...)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](js, opts...))
	require.NoError(t, err, "evaluate %s", js)
	return v
}

// textOf returns the text an element shows ("" when there is none).
func textOf(ctx context.Context, sel string) string {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	js := `(function(){var e=document.querySelector(` + jsQuote(sel) + `);return e?e.innerText:""})()`
	s, _ := chromedp.Run(sctx, chromedp.Evaluate[string](js))
	return s
}

func jsQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// waitText waits until the element sel shows every one of texts.
func waitText(t *testing.T, ctx context.Context, sel string, within time.Duration, texts ...string) {
	t.Helper()
	var mu sync.Mutex
	var last string
	ok := assert.Eventually(t, func() bool {
		s := textOf(ctx, sel)
		mu.Lock()
		last = s
		mu.Unlock()
		for _, x := range texts {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	}, within, 25*time.Millisecond)
	if !ok {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s never showed %q within %v; it shows:\n%s", sel, texts, within, last)
	}
}

// screenshot writes the page, w pixels wide, down to the bottom of main
// (at most maxH pixels) as a PNG to dir/name.
func screenshot(t *testing.T, ctx context.Context, dir, name string, w int64, maxH int) {
	t.Helper()
	browse(t, ctx, "resize for "+name, chromedp.EmulateViewport(w, testbrowser.Height))
	h := eval[float64](t, ctx, fmt.Sprintf(`Math.min(Math.ceil(document.querySelector('main').getBoundingClientRect().bottom) + 8, %d)`, maxH))
	browse(t, ctx, "resize for "+name, chromedp.EmulateViewport(w, int64(h)))
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng,
			Clip:   &page.Viewport{Width: float64(w), Height: h, Scale: 1},
		})
		return res.Data, err
	})
	require.NoError(t, err, "screenshot %s", name)
	browse(t, ctx, "resize back", chromedp.EmulateViewport(testbrowser.Width, testbrowser.Height))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot %s: %dx%.0f, %d KB", path, w, h, len(png)/1024)
}
