package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// With slot pools in its heartbeat, another worker counts for a
// reservation only where the urgent task could run on it: a free slot in
// the pool of the urgent levels (or in any pool, if that pool borrows),
// a lower task in that pool.
func TestReserveCountsOtherWorkersPools(t *testing.T) {
	high, bulk := []int{2, 3}, []int{0, 1}
	layout := func(borrow bool) []PoolLayout {
		return []PoolLayout{{Pool: 1, Size: 1, Levels: high, Borrow: borrow}, {Pool: 2, Size: 1, Levels: bulk}}
	}
	cases := []struct {
		name     string
		pools    []PoolLayout // worker o's heartbeat
		bulkBusy bool         // o's bulk pool runs a level-0 task
		want     error
	}{
		{"free slot in another pool", layout(false), false, nil},
		{"no layout: any free slot counts", nil, false, ErrFreeSlotInFleet},
		{"the urgent pool borrows the free slot", layout(true), false, ErrFreeSlotInFleet},
		{"lower task in another pool", layout(false), true, nil},
		{"no layout: any lower task counts", nil, true, ErrLowerVictimElsewhere},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parallelBackends(t, func(t *testing.T, b testredis.Backend) {
				e := newEnv(t, b, func(c *Config) { c.Levels = 4 })
				// Worker o: its high pool runs a level-2 task.
				e.enqueue("o-high", Level(2))
				res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "o", Groups: []LeaseGroup{{Levels: high, Count: 1, Pool: 1}}})
				require.NoError(t, err)
				held := res.Tasks
				if tc.bulkBusy {
					e.enqueue("o-bulk", Level(0))
					res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "o", Groups: []LeaseGroup{{Levels: bulk, Count: 1, Pool: 2}}})
					require.NoError(t, err)
					held = append(held, res.Tasks...)
				}
				require.Len(t, held, map[bool]int{false: 1, true: 2}[tc.bulkBusy])
				_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "o", Capacity: 2, Pools: tc.pools, Leases: held})
				require.NoError(t, err)
				// Worker w (saturated) runs a level-2 victim; urgent work arrives.
				v := e.run("w", "victim", 2)
				_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Pools: layout(false), Leases: []*Task{v}})
				require.NoError(t, err)
				urgent := e.enqueue("urgent", Level(3))

				got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w", VictimID: v.ID, VictimLevel: 2, MinLevel: 3,
					MaxPreemptions: -1, Skip: bulk, Pool: 1})
				if tc.want != nil {
					require.ErrorIs(t, err, tc.want)
					return
				}
				require.NoError(t, err)
				require.Equal(t, urgent.ID, got.ID)
				busy := e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val()
				require.Equal(t, "1", busy["w|1"], "the urgent task takes a slot of w's pool 1")
				require.Equal(t, "1", busy["o|1"])
				// Ending the leases clears the pools' counts.
				require.NoError(t, e.c.Requeue(e.ctx, v, RequeuePreempted))
				require.NoError(t, e.c.Ack(e.ctx, got))
				for _, tk := range held {
					require.NoError(t, e.c.Ack(e.ctx, tk))
				}
				busy = e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val()
				for _, f := range []string{"w|1", "o|1", "o|2"} {
					require.NotContains(t, busy, f)
				}
			})
		})
	}
}

// Workers lists each worker's pools, named, with the slots each holds.
func TestWorkersShowPools(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels = 4 })
		e.enqueue("h", Level(3))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "o", Groups: []LeaseGroup{
			{Levels: []int{2, 3}, Count: 2, Pool: 1}, {Levels: []int{0, 1}, Count: 1, Pool: 2}}})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "o", Capacity: 3, Leases: res.Tasks, Pools: []PoolLayout{
			{Pool: 1, Name: "high", Size: 2, Levels: []int{2, 3}}, {Pool: 2, Name: "bulk", Size: 1, Levels: []int{0, 1}, Borrow: true}}})
		require.NoError(t, err)
		ws, err := e.c.Workers(e.ctx)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, []WorkerPool{{Name: "high", Levels: []int{2, 3}, Size: 2, Busy: 1},
			{Name: "bulk", Levels: []int{0, 1}, Size: 1, Busy: 0, Borrow: true}}, ws[0].Pools)
		require.Equal(t, 1, ws[0].Busy)
	})
}
