package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chart is one PNG: a group of rows (indexes into rows) with asynq's and
// Overtake's medians side by side for each.
type chart struct {
	file, title, unit string
	rows              []int
	log               bool // logarithmic y axis, for figures orders of magnitude apart
	labels            []string
}

var chartList = []chart{
	{file: "01.png", title: "Redis memory per pending task (100-byte payload)", unit: "bytes", rows: []int{0}},
	{file: "02.png", title: "Redis commands per processed no-op task", unit: "commands", rows: []int{1}},
	{file: "03.png", title: "Redis CPU per 10k no-op tasks, enqueue + process", unit: "ms", rows: []int{2}},
	{file: "04.png", title: "single Enqueue, 16 goroutines, fraction of EVALSHA ceiling", unit: "fraction", rows: []int{3}},
	{file: "05.png", title: "drain, concurrency 64, fraction of EVALSHA ceiling", unit: "fraction", rows: []int{4}},
	{file: "06.png", title: "idle worker process, Redis commands per second", unit: "commands/s", rows: []int{5}},
	{file: "07.png", title: "urgent task start, 4 slots full of low tasks", unit: "ms (log)", rows: []int{6, 7},
		log: true, labels: []string{"p50", "p99"}},
	{file: "08.png", title: "wake latency, idle worker", unit: "ms (log)", rows: []int{8, 9},
		log: true, labels: []string{"p50", "p99"}},
}

var (
	colors    = map[string]color.Color{"asynq": color.RGBA{R: 150, G: 150, B: 150, A: 255}, "BullMQ": color.RGBA{R: 220, G: 140, B: 40, A: 255}, "Overtake": color.RGBA{R: 50, G: 100, B: 170, A: 255}}
	targetRed = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	// chartW and chartH make a 600×400-pixel PNG at gonum's 96 dpi.
	chartW, chartH = vg.Length(600) * vg.Inch / 96, vg.Length(400) * vg.Inch / 96
)

// charts writes every chart of chartList into dir.
func (r *results) charts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range chartList {
		p, err := r.plot(c)
		if err != nil {
			return fmt.Errorf("chart %s: %w", c.file, err)
		}
		if err := p.Save(chartW, chartH, filepath.Join(dir, c.file)); err != nil {
			return err
		}
	}
	return nil
}

// plot draws chart c: one bar per system and row, the row's target as a
// dashed red segment over its group, the values above the bars. Bars are
// polygons from the axis' floor, so that a log axis (no zero) works.
func (r *results) plot(c chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.unit
	p.Legend.Top, p.Legend.Left = true, true
	floor := 0.0
	if c.log {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		floor = 0.01 // a log axis cannot show zero
	}
	const width = 0.3 // of a group's 1 unit
	top := floor
	for i, name := range r.names {
		var xys plotter.XYs
		var text []string
		var bars []*plotter.Polygon
		for j, ri := range c.rows {
			v := max(median(r.values(name, rows[ri])), floor)
			x := float64(j) + (float64(i)-float64(len(r.names)-1)/2)*width
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x - width/2, Y: floor}, {X: x + width/2, Y: floor},
				{X: x + width/2, Y: v}, {X: x - width/2, Y: v}})
			if err != nil {
				return nil, err
			}
			bar.Color, bar.LineStyle.Width = colors[name], 0
			bars = append(bars, bar)
			p.Add(bar)
			xys = append(xys, plotter.XY{X: x, Y: v})
			text = append(text, num(v, ""))
			top = max(top, v)
		}
		p.Legend.Add(name, bars[0])
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text})
		if err != nil {
			return nil, err
		}
		for k := range labels.TextStyle {
			labels.TextStyle[k].XAlign, labels.TextStyle[k].YAlign = draw.XCenter, draw.YBottom
		}
		labels.Offset = vg.Point{Y: vg.Points(2)}
		p.Add(labels)
	}
	for j, ri := range c.rows {
		t := rows[ri].target
		if t.op == "" {
			continue
		}
		line, err := plotter.NewLine(plotter.XYs{{X: float64(j) - 0.45, Y: t.value}, {X: float64(j) + 0.45, Y: t.value}})
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = targetRed, vg.Points(1.5)
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(line)
		p.Legend.Add("target "+t.String(), line)
		top = max(top, t.value)
	}
	if c.log {
		p.Y.Min, p.Y.Max = floor, top*20
	} else {
		p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend and the labels
	}
	names := c.labels
	if names == nil {
		names = []string{""}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(c.rows))-0.4
	return p, nil
}
