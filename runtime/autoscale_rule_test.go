package runtime

import "testing"

// The autoscaling rule: desired = clamp(used + ceil(pending/target), Min,
// Max); up at once, down by at most ScaleDownStep.
func TestAutoscaleNext(t *testing.T) {
	a := (&Autoscale{Min: 2, Max: 10}).withDefaults()
	a3 := (&Autoscale{Min: 1, Max: 20, TargetBacklogPerWorker: 3, ScaleDownStep: 4}).withDefaults()
	for _, c := range []struct {
		name      string
		a         *Autoscale
		cur, used int
		pending   int64
		want      int
	}{
		{"idle at min stays", a, 2, 0, 0, 2},
		{"saturated, no backlog: stays", a, 5, 5, 0, 5},
		{"backlog: up at once", a, 2, 2, 5, 7},
		{"backlog past max: clamped", a, 4, 4, 100, 10},
		{"at max with backlog stays", a, 10, 10, 3, 10},
		{"drained: one step down", a, 10, 0, 0, 9},
		{"partly busy: one step down", a, 6, 3, 0, 5},
		{"down never below used", a, 6, 5, 0, 5},
		{"down never below min", a, 3, 0, 0, 2},
		{"target rounds up", a3, 1, 1, 4, 3},
		{"target exact", a3, 1, 1, 6, 3},
		{"larger step", a3, 15, 2, 0, 11},
		{"larger step stops at desired", a3, 5, 2, 0, 2},
		{"huge backlog", a3, 1, 0, 1<<63 - 1, 20},
	} {
		if got := c.a.next(c.cur, c.used, c.pending); got != c.want {
			t.Errorf("%s: next(%d, %d, %d) = %d, want %d", c.name, c.cur, c.used, c.pending, got, c.want)
		}
	}
}

func TestAutoscaleDefaults(t *testing.T) {
	var none *Autoscale
	if none.withDefaults() != nil || none.validate(10) != nil {
		t.Fatal("nil Autoscale must stay off and valid")
	}
	a := &Autoscale{Min: 1, Max: 3}
	d := a.withDefaults()
	if d == a || d.Interval != DefaultAutoscaleInterval || d.TargetBacklogPerWorker != 1 || d.ScaleDownStep != 1 {
		t.Errorf("defaults = %+v", *d)
	}
	if *a != (Autoscale{Min: 1, Max: 3}) {
		t.Errorf("withDefaults changed its receiver: %+v", *a)
	}
}
