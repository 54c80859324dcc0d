package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeTask runs for every leased task, so what it allocates is paid per
// task by every worker. A fresh task (no state key) and a leased one
// allocate the Task and its payload only: a fresh one cost 12 while each
// empty number cost a *strconv.NumError (atoi now skips them), the state
// was on the heap because its slow path handed it to encoding/json, and
// the record was split into a slice.
func TestDecodeTaskAllocs(t *testing.T) {
	rec := recordOf(t, &Task{Info: Info{Type: "noop", Payload: []byte("p")}}, 1_750_000_000_000)
	leased := `{"st":"active","w":"w1","tk":"tok","stt":"1750000000001","dl":"1750000030001","att":"1"}`
	for _, c := range []struct {
		name string
		st   any
		max  float64
	}{{"fresh", nil, 2}, {"leased", leased, 2}} {
		n := testing.AllocsPerRun(200, func() {
			tk, err := decodeTask("id1", rec, c.st, nil)
			if err != nil || tk.Type != "noop" {
				t.Fatal(tk, err)
			}
		})
		t.Logf("%s: %v allocations", c.name, n)
		require.LessOrEqual(t, n, c.max, c.name)
	}
}
