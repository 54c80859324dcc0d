package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
)

// Environment of the browser test (scripts/test-jaeger.sh,
// scripts/jaeger-screenshots.sh).
const (
	// envJaegerUI is the directory of the Jaeger UI that Jaeger serves; empty
	// when ../shared/jaeger-ui holds no built UI.
	envJaegerUI = "OVERTAKE_JAEGER_UI"
	// envChromium names the Chromium binary; default: the first of
	// chromiumNames on $PATH.
	envChromium = "OVERTAKE_CHROMIUM"
	// envScreenshots is a directory: when set, the browser test also writes
	// the README's screenshots there.
	envScreenshots = "OVERTAKE_SCREENSHOTS_DIR"
)

var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// Viewport of the browser, so that screenshots are alike wherever they are
// taken.
const viewportW, viewportH = 1280, 800

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

// chromium returns the path of the Chromium binary, skipping the test when
// there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		path, err := exec.LookPath(p)
		require.NoError(t, err, "%s=%s", envChromium, p)
		return path
	}
	for _, name := range chromiumNames {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skipf("no Chromium binary on $PATH (tried %s; set %s, or apt-get install chromium)",
		strings.Join(chromiumNames, ", "), envChromium)
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile, talking to
// chromedp over a pipe (no debugging port), that resolves no host name but
// 127.0.0.1 and localhost. It stops at the end of the test.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(viewportW, viewportH),
		chromedp.DisableGPU,
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.Flag("hide-scrollbars", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with it
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		// Close the browser and wait for its process to exit.
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		done := make(chan struct{})
		go func() { _ = chromedp.Cancel(ctx); close(done) }()
		select {
		case <-done:
		case <-cctx.Done():
			t.Errorf("Chromium did not stop within 10s")
		}
		cancel()
		acancel()
	})
	// The first action starts the browser; it lives as long as ctx.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(viewportW, viewportH)), "start %s", path)
	return ctx
}

// browse runs steps with a bound, naming what failed.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(sctx, steps...), "browser: %s", what)
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
			Clip:   &page.Viewport{Width: viewportW, Height: h, Scale: 1},
		})
		return res.Data, err
	})
	require.NoError(t, err, "screenshot %s", name)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot %s: %dx%.0f, %d KB", path, viewportW, h, len(png)/1024)
}
