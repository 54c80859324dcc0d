package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// charts writes one small bar chart per figure that has a target: asynq
// and Overtake side by side, medians.
func (r *results) charts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, w := range rows {
		if w.ok == nil {
			continue
		}
		p := plot.New()
		p.Title.Text = wrap(w.name, 48)
		p.Y.Label.Text = w.unit
		vals := plotter.Values{median(r.values("asynq", w)), median(r.values("Overtake", w))}
		bars, err := plotter.NewBarChart(vals, vg.Points(60))
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.NominalX("asynq", "Overtake")
		file := filepath.Join(dir, fmt.Sprintf("%02d.png", i+1))
		if err := p.Save(4*vg.Inch, 3*vg.Inch, file); err != nil {
			return err
		}
	}
	return nil
}

// wrap breaks s into lines of at most n characters, at spaces.
func wrap(s string, n int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
