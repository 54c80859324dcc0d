// Package testbrowser starts headless Chromium for the browser tests
// (console and e2e), driven by chromedp.
package testbrowser

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// EnvChromium names the Chromium binary; default: the first of Names on
// $PATH.
const EnvChromium = "OVERTAKE_CHROMIUM"

// Names are the Chromium binaries looked for on $PATH.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// The browser's viewport, so that screenshots are alike wherever they are
// taken.
const (
	// Width is the viewport's width in CSS pixels.
	Width = 1280
	// Height is the viewport's height in CSS pixels.
	Height = 800
)

// Chromium returns the path of the Chromium binary, skipping the test when
// there is none.
func Chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		path, err := exec.LookPath(p)
		require.NoError(t, err, "%s=%s", EnvChromium, p)
		return path
	}
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skipf("browser test skipped: no Chromium binary on $PATH (tried %s; set %s, or apt-get install chromium)",
		strings.Join(Names, ", "), EnvChromium)
	return ""
}

// New starts a headless Chromium at path with a fresh profile, talking to
// chromedp over a pipe (no debugging port), that resolves no host name but
// 127.0.0.1, localhost and aliases, which resolve to 127.0.0.1 (another
// site's name, as a DNS rebinding page has). It stops at the end of the
// test.
func New(t *testing.T, path string, aliases ...string) context.Context {
	t.Helper()
	rules := "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
	for _, a := range aliases {
		rules = "MAP " + a + " 127.0.0.1, " + rules
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(Width, Height),
		chromedp.DisableGPU,
		chromedp.Flag("host-resolver-rules", rules),
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
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(Width, Height)), "start %s", path)
	return ctx
}

// Do runs steps within timeout, naming what failed.
func Do(t *testing.T, ctx context.Context, timeout time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	require.NoError(t, chromedp.Do(sctx, steps...), "browser: %s", what)
}
