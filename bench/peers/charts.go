package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
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
		bars.Color = color.RGBA{R: 70, G: 110, B: 170, A: 255}
		p.Add(bars)
		if goal, ok := targetValue(w.target); ok {
			line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: goal}, {X: 1.5, Y: goal}})
			if err != nil {
				return err
			}
			line.Color = color.RGBA{R: 200, G: 40, B: 40, A: 255}
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(line)
			p.Legend.Add("target "+w.target, line)
			p.Legend.Top = true
		}
		p.NominalX("asynq", "Overtake")
		file := filepath.Join(dir, fmt.Sprintf("%02d.png", i+1))
		if err := p.Save(4*vg.Inch, 3*vg.Inch, file); err != nil {
			return err
		}
	}
	return nil
}

// targetValue reads the number of a target such as "≤ 350" or "< 5".
func targetValue(t string) (float64, bool) {
	f := strings.Fields(t)
	if len(f) != 2 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[1], 64)
	return v, err == nil
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
