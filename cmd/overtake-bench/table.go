package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// row is one line of the results table.
type row struct {
	id     string // figure number from the brief, "" for extra lines
	figure string
	value  string
	unit   string
	target string
	note   string
}

// verdict is the note's first word: pass, FAIL, or info when there is no
// target.
func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// table collects rows and prints them as markdown.
type table struct{ rows []row }

func (t *table) add(r row) { t.rows = append(t.rows, r) }

// skip records a figure that could not be measured.
func (t *table) skip(id, figure string, err error) {
	t.add(row{id: id, figure: figure, value: "—", note: "error: " + oneLine(err.Error())})
}

// write prints the rows in figure order, each figure's rows in the order
// they were added.
func (t *table) write(w io.Writer) {
	slices.SortStableFunc(t.rows, func(a, b row) int {
		x, _ := strconv.Atoi(a.id)
		y, _ := strconv.Atoi(b.id)
		return x - y
	})
	fmt.Fprintln(w, "| # | figure | value | unit | target | note |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---|")
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n",
			cell(r.id), cell(r.figure), cell(r.value), cell(r.unit), cell(r.target), cell(r.note))
	}
}

func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", "\\|") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// num formats a figure with three significant digits, without exponent for
// the magnitudes a benchmark reports.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return num(float64(d) / float64(time.Millisecond)) }

// latencies holds samples and reports percentiles.
type latencies []time.Duration

// pct returns the p-th percentile (nearest rank), 0 for no samples.
func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (l latencies) mean() time.Duration {
	if len(l) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	return sum / time.Duration(len(l))
}

// summary is "mean / max" for the note column.
func (l latencies) summary() string {
	return fmt.Sprintf("n=%d, p90 %s ms, max %s ms, mean %s ms", len(l), ms(l.pct(90)), ms(l.pct(100)), ms(l.mean()))
}
