package main

import (
	"strings"
	"testing"
	"time"

	"github.com/overtake/overtake/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// A soak's sizes: two thirds of the duration for the chaos phase, one third
// for the failover scenario, repeating faults, and room in the timeout.
func TestSoakSizes(t *testing.T) {
	o := soak(options{rate: 100, timeout: 5 * time.Minute}, 45*time.Minute)
	if o.tasks != 180_000 || o.foTasks != 90_000 {
		t.Fatalf("tasks %d and %d, want 180000 and 90000", o.tasks, o.foTasks)
	}
	if o.cycle != time.Minute || o.foEvery != 30*time.Second || o.timeout != 55*time.Minute {
		t.Fatalf("cycle %v, failover every %v, timeout %v", o.cycle, o.foEvery, o.timeout)
	}
}

// The failover scenario breaches on a lost task that the replica confirmed,
// not on one it did not (asynchronous replication), and says which.
func TestFailoverBreach(t *testing.T) {
	r := &foReport{enqueued: 10, unconfirmed: 1, lostUnconfirmed: []string{"failover-3"}}
	if r.breached() {
		t.Fatal("an unconfirmed task lost is not a breach")
	}
	tbl := r.table(options{foTasks: 10, rate: 100})
	if !strings.Contains(tbl, "| unconfirmed tasks lost (asynchronous replication) | 1 | ok |") {
		t.Fatalf("table:\n%s", tbl)
	}
	r.lostConfirmed = []string{"failover-7"}
	if !r.breached() {
		t.Fatal("a confirmed task lost is a breach")
	}
	if tbl := r.table(options{foTasks: 10, rate: 100}); !strings.Contains(tbl, "lost: failover-7") ||
		!strings.Contains(tbl, "| confirmed tasks not done (lost or dead) | 1 | **BREACH** |") {
		t.Fatalf("table:\n%s", tbl)
	}
	for _, bad := range []*foReport{{dead: 1}, {pending: 1}, {breaches: map[string]string{"two runs at once": "1"}}} {
		if !bad.breached() {
			t.Fatalf("%+v is a breach", bad)
		}
	}
	rep := &report{enqueued: 5, done: 5, failover: &foReport{lostConfirmed: []string{"x"}}}
	if !rep.breached() {
		t.Fatal("the suite fails on the failover scenario's breach")
	}
}

// The fail-back case breaches on a probe that did not start, or started
// fbBound or more after its Enqueue (a wake-up subscription left on the
// demoted primary), and its rows follow the failover scenario's.
func TestFailbackBreach(t *testing.T) {
	r := &fbReport{rounds: 2, latency: []float64{0.8, 1.2, 3}}
	if r.breached() {
		t.Fatal("fast probes are no breach")
	}
	tbl := (&foReport{failback: r}).table(options{foTasks: 10, rate: 100})
	if !strings.Contains(tbl, "| fail-backs | 2 | ok |") || !strings.Contains(tbl, "| 3, 1.2 ms, 1.2 ms, 3.0 ms | ok |") {
		t.Fatalf("table:\n%s", tbl)
	}
	for _, bad := range []*fbReport{{latency: []float64{1, 1000}}, {notStarted: 1}} {
		if !bad.breached() || !(&foReport{failback: bad}).breached() {
			t.Fatalf("%+v is a breach", bad)
		}
	}
	if tbl := (&fbReport{rounds: 1, latency: []float64{1, 9000}}).table(); !strings.Contains(tbl,
		"| 2, 1.0 ms, 1.0 ms, 9000.0 ms | **BREACH** |") {
		t.Fatalf("table:\n%s", tbl)
	}
}
