package console

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units (the SVG scales to its box).
const chartW, chartH = 300, 80

// chart is a small line chart of one quantity per level over the history.
type chart struct {
	Title  string
	W, H   int
	Max    string // the top of the scale
	Span   string // how far back the chart goes
	Series []series
	Empty  bool
}

// series is one level's line.
type series struct {
	Name   string
	Class  string // lv0..lv5, the level's color
	Points string // "x,y x,y ..."
	Last   string
}

// newChart draws value(sample, level) for every level over samples, on a
// scale from 0 to the largest value (at least 1).
func newChart(title string, samples []sample, levels int, names func(int) string,
	value func(s sample, l int) float64, format func(float64) string) chart {
	c := chart{Title: title, W: chartW, H: chartH, Empty: len(samples) < 2}
	top := 0.0
	for _, s := range samples {
		for l := range levels {
			top = max(top, value(s, l))
		}
	}
	top = max(top, 1)
	c.Max = format(top)
	if len(samples) > 1 {
		c.Span = "last " + fmtDur(samples[len(samples)-1].At.Sub(samples[0].At).Round(1e9))
	}
	for l := levels - 1; l >= 0; l-- {
		var b strings.Builder
		for i, s := range samples {
			x := float64(chartW) * float64(i) / float64(max(len(samples)-1, 1))
			y := float64(chartH) - (float64(chartH)-2)*value(s, l)/top - 1
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
		}
		last := "—"
		if n := len(samples); n > 0 {
			last = format(value(samples[n-1], l))
		}
		c.Series = append(c.Series, series{Name: names(l), Class: fmt.Sprintf("lv%d", l%6), Points: b.String(), Last: last})
	}
	return c
}

func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}
