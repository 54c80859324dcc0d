package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/overtake/overtake/queue"
)

// ANSI escapes of the live view.
const (
	escHome       = "\x1b[H"    // cursor to the top left
	escClearLine  = "\x1b[K"    // clear to the end of the line
	escClearBelow = "\x1b[J"    // clear to the end of the screen
	escHideCursor = "\x1b[?25l" // hide the cursor while drawing
	escShowCursor = "\x1b[?25h" // show it again
)

// defaultCols is the width assumed when the terminal does not say.
const defaultCols = 80

type watchOptions struct {
	interval time.Duration
	json     bool
	sla      map[int]time.Duration
}

// terminal is an output that may be an interactive terminal; a test
// passes a fake one.
type terminal interface {
	// isTerminal reports whether escapes redraw a screen.
	isTerminal() bool
	// size returns the columns and rows, 0 when unknown.
	size() (cols, rows int)
}

// fileTerminal is stdout.
type fileTerminal struct{ f *os.File }

func (t fileTerminal) isTerminal() bool {
	fi, err := t.f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	_, _, ok := winsize(t.f)
	return ok || !winsizeSupported // /dev/null is a character device too
}

func (t fileTerminal) size() (cols, rows int) {
	cols, rows, _ = winsize(t.f)
	return cols, rows
}

// terminalOf returns w's terminal, or nil when w is not one.
func terminalOf(w io.Writer) terminal {
	var t terminal
	switch w := w.(type) {
	case terminal:
		t = w
	case *os.File:
		t = fileTerminal{w}
	default:
		return nil
	}
	if !t.isTerminal() {
		return nil
	}
	return t
}

// termSize returns t's size, else $COLUMNS and $LINES, else 80 columns
// and no row limit.
func termSize(t terminal) (cols, rows int) {
	cols, rows = t.size()
	env := func(name string) int {
		n, err := strconv.Atoi(os.Getenv(name))
		if err != nil || n < 1 {
			return 0
		}
		return n
	}
	if cols <= 0 {
		cols = env("COLUMNS")
	}
	if rows <= 0 {
		rows = env("LINES")
	}
	if cols <= 0 {
		cols = defaultCols
	}
	return cols, rows
}

// watch writes a frame every o.interval until ctx ends: redrawn in place
// on a terminal, else plain frames separated by a blank line, or one JSON
// object per line with o.json. Ctrl-C (ctx's end) exits cleanly.
func watch(ctx context.Context, q *queue.Client, w io.Writer, o watchOptions) error {
	tty := terminalOf(w)
	if o.json {
		tty = nil
	}
	if tty != nil {
		defer func() { _, _ = io.WriteString(w, escShowCursor+"\n") }()
	}
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		v, err := snapshot(ctx, q, o.sla)
		if ctx.Err() != nil {
			return nil
		}
		var buf bytes.Buffer
		switch {
		case err != nil && tty == nil:
			return err
		case o.json:
			b, err := json.Marshal(v.toJSON())
			if err != nil {
				return err
			}
			buf.Write(append(b, '\n'))
		case tty != nil:
			if n == 0 {
				buf.WriteString(escHideCursor)
			}
			cols, rows := termSize(tty)
			lines := []string{watchTitle(o.interval, time.Now(), err)}
			if err == nil {
				lines = append(lines, frameLines(v, 0)...)
			}
			buf.Write(ttyFrame(lines, cols, rows))
		default:
			if n > 0 {
				buf.WriteString("\n")
			}
			lines := append([]string{watchTitle(o.interval, time.Now(), nil)}, frameLines(v, 0)...)
			buf.WriteString(strings.Join(lines, "\n") + "\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchTitle is the first line of a --watch frame; a failed read shows
// its error there and the next interval tries again.
func watchTitle(interval time.Duration, now time.Time, err error) string {
	s := "overtake stats every " + interval.String() + " at " + now.Format("15:04:05") + " (Ctrl-C to quit)"
	if err != nil {
		s += ": error: " + oneLine(mask(err.Error()), 200)
	}
	return s
}

// ttyFrame turns lines into one write that redraws a terminal in place
// without clearing it first (so nothing flickers): cursor home, each line
// cut to cols-1 runes (writing the last column would leave the terminal
// about to wrap) with its old tail cleared, then the rest of the screen
// cleared. With rows > 0 it draws at most rows-1 lines.
func ttyFrame(lines []string, cols, rows int) []byte {
	if rows > 0 && len(lines) > rows-1 {
		lines = lines[:max(rows-1, 1)]
	}
	var b bytes.Buffer
	b.WriteString(escHome)
	for _, l := range lines {
		b.WriteString(truncate(l, cols-1))
		b.WriteString(escClearLine + "\n")
	}
	b.WriteString(escClearBelow)
	return b.Bytes()
}
