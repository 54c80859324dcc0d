package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
)

// Environment of the browser test (scripts/test-jaeger.sh,
// scripts/jaeger-screenshots.sh).
const (
	// envJaegerUI is the directory of the Jaeger UI that Jaeger serves; empty
	// when ../shared/jaeger-ui holds no built UI.
	envJaegerUI = "OVERTAKE_JAEGER_UI"
	// envScreenshots is a directory: when set, the browser test also writes
	// the README's screenshots there.
	envScreenshots = "OVERTAKE_SCREENSHOTS_DIR"
)

// jaegerUI returns the directory of the real Jaeger UI that the Jaeger under
// test serves, skipping the test without one.
func jaegerUI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envJaegerUI)
	if dir == "" {
		t.Skipf("%s unset: Jaeger serves no real UI (scripts/test-jaeger.sh sets it when "+
			"../shared/jaeger-ui/jaeger-ui-*.tar.gz exists; see scripts/jaeger.sh ui)", envJaegerUI)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Skipf("%s=%s has no index.html: %v", envJaegerUI, dir, err)
	}
	return dir
}

// chromium returns the Chromium binary, skipping the test without one.
func chromium(t *testing.T) string { return testbrowser.Chromium(t) }

// newBrowser starts headless Chromium for the test (see testbrowser.New).
func newBrowser(t *testing.T, path string) context.Context { return testbrowser.New(t, path) }

// browse runs steps with a bound, naming what failed.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	testbrowser.Do(t, ctx, 30*time.Second, what, steps...)
}

// pageText returns the text the page shows (document.body.innerText).
func pageText(ctx context.Context) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(sctx, chromedp.Evaluate[string](`document.body.innerText`))
}

// waitText waits until the page shows every one of texts, and returns what
// it shows.
func waitText(t *testing.T, ctx context.Context, texts ...string) string {
	t.Helper()
	var (
		mu      sync.Mutex // the condition runs on its own goroutine
		body    string
		lastErr error
	)
	shows := func() bool {
		text, err := pageText(ctx)
		mu.Lock()
		defer mu.Unlock()
		body, lastErr = text, err
		return err == nil && len(missing(text, texts)) == 0
	}
	ok := assert.Eventually(t, shows, 20*time.Second, 200*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if !ok {
		t.Fatalf("the page never showed %q (last error %v); it shows:\n%s", missing(body, texts), lastErr, body)
	}
	return body
}

// missing returns those of texts that body lacks.
func missing(body string, texts []string) []string {
	var out []string
	for _, s := range texts {
		if !strings.Contains(body, s) {
			out = append(out, s)
		}
	}
	return out
}

// bottomOf is a JavaScript expression: the bottom of the element that the
// CSS selector sel matches (the i-th of them).
func bottomOf(sel string, i int) string {
	return fmt.Sprintf(`document.querySelectorAll(%s)[%d].getBoundingClientRect().bottom`, strconv.Quote(sel), i)
}

// screenshot writes the viewport as a PNG to dir/name when dir is set, cut
// off 8 pixels below bottom (a JavaScript expression, see bottomOf).
func screenshot(t *testing.T, ctx context.Context, dir, name, bottom string) {
	t.Helper()
	if dir == "" {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := chromedp.Run(sctx, chromedp.Evaluate[float64](`Math.min(Math.ceil(`+bottom+`) + 8, window.innerHeight)`))
	require.NoError(t, err, "screenshot %s: evaluate %s", name, bottom)
	png, err := chromedp.Run(sctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng,
			Clip:   &page.Viewport{Width: testbrowser.Width, Height: h, Scale: 1},
		})
		return res.Data, err
	})
	require.NoError(t, err, "screenshot %s", name)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot %s: %dx%.0f, %d KB", path, testbrowser.Width, h, len(png)/1024)
}
