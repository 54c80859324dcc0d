package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseCommandCalls(t *testing.T) {
	raw := "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=5,usec_per_call=0.5,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_set:calls=7,usec=1,usec_per_call=0.1\r\ncmdstat_config|resetstat:calls=1,usec=2\r\nused_memory:5\r\n"
	if got := parseCommandCalls(raw); got != 18 {
		t.Fatalf("calls = %d, want 18", got)
	}
}

func TestMedianAndPercentile(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Fatalf("median even = %v", m)
	}
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	if p := percentile(ds, 99); p != 99 {
		t.Fatalf("p99 = %v ms, want 99", p)
	}
	if p := percentile(ds, 50); p != 50 {
		t.Fatalf("p50 = %v ms, want 50", p)
	}
}

func TestTableRatiosAndTargets(t *testing.T) {
	r := &results{names: []string{"asynq", "Overtake"}, rounds: map[string][]figures{
		"asynq":    {{mem: 600, cmds: 17}},
		"Overtake": {{mem: 300, cmds: 9}},
	}, ceil16: []float64{1}, ceil64: []float64{1}}
	tab := r.table(options{}, "a", "7.0", "cmd")
	for _, want := range []string{"| 600 B | 300 B | 0.50 | ≤ 350 | yes |", "| 17.00 cmds | 9.00 cmds | 0.53 | ≤ 8 | **no** |"} {
		if !strings.Contains(tab, want) {
			t.Fatalf("table lacks %q:\n%s", want, tab)
		}
	}
	if w := wrap("one two three four", 9); w != "one two\nthree\nfour" {
		t.Fatalf("wrap = %q", w)
	}
}
