package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// maxIdleCommandsPerSecond is the target of an idle worker process: below
// BullMQ's 1.6 a second measured beside it (issue 32); 1.5 since an idle
// lease call reads each set's earliest entry once (prelude.lua's
// due_reads), 1.7 before.
const maxIdleCommandsPerSecond = 1.5

// maxSwitchCheckCommands bounds the checks of the wake-up subscription
// after an outage ends, a failover is announced or a subscription hears
// its first sentinel hello (checkSubscription): none while none happens.
const maxSwitchCheckCommands = 100

// An idle worker's Redis cost, from counts on a real redis-server rather
// than timing: the commands of one idle poll (a lease call that finds
// nothing), of one heartbeat and of one health check of the wake-up
// subscription (a PUBLISH to itself), each at its default interval. It fails if the
// scripts grow or the defaults shrink past the target. The sentinels'
// hellos, which a FailoverClient's subscription hears, cost no command;
// the series of checks after an outage or a failover costs at most
// maxSwitchCheckCommands, and nothing while idle.
func TestIdleCostGuard(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	rdb := srv.NewClient(t)
	ctx := context.Background()
	q, err := queue.New(rdb, queue.Config{})
	require.NoError(t, err)
	cfg := Config{}.withDefaults(q)
	count := func(call func()) int64 {
		call() // loads the script, so NOSCRIPT is not counted
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		call()
		n, err := testredis.CommandCalls(ctx, rdb)
		require.NoError(t, err)
		return n - 1 // CONFIG RESETSTAT counts itself
	}
	// A fresh client per poll, as after a long idle wait: the poll also
	// sweeps for due and expired work. Made (and its shape checked, as
	// runtime.New does) before the count.
	var fresh []*store.Store
	for range 2 {
		f, err := queue.New(rdb, queue.Config{})
		require.NoError(t, err)
		fresh = append(fresh, store.Of(f))
		require.NoError(t, fresh[len(fresh)-1].CheckShape(ctx))
	}
	poll := count(func() {
		f := fresh[0]
		fresh = fresh[1:]
		_, err := f.Lease(ctx, store.LeaseRequest{Worker: cfg.WorkerID, Count: cfg.Concurrency})
		require.NoError(t, err)
	})
	eng := store.Of(q)
	require.NoError(t, eng.CheckShape(ctx))
	beat := count(func() {
		_, err := eng.Heartbeat(ctx, store.Heartbeat{Worker: cfg.WorkerID, Capacity: cfg.Concurrency,
			TTL: 2*cfg.HeartbeatInterval + 500e6})
		require.NoError(t, err)
	})
	checkCh := store.Of(q).CheckChannel(cfg.WorkerID)
	sub := rdb.Subscribe(ctx, store.Of(q).WakeChannel(), checkCh)
	defer sub.Close()
	for range 2 {
		_, err = sub.Receive(ctx)
		require.NoError(t, err)
	}
	ping := count(func() {
		n, err := rdb.Publish(ctx, checkCh, "check").Result()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = sub.Receive(ctx) // the message: the publish has run
		require.NoError(t, err)
	})
	rate := float64(poll)/cfg.PollInterval.Seconds() + float64(beat)/cfg.HeartbeatInterval.Seconds() +
		float64(ping)/cfg.wakeCheckInterval().Seconds()
	t.Logf("idle poll %d commands every %v, heartbeat %d every %v, subscription check %d every %v: %.2f commands/s",
		poll, cfg.PollInterval, beat, cfg.HeartbeatInterval, ping, cfg.wakeCheckInterval(), rate)
	require.LessOrEqual(t, rate, maxIdleCommandsPerSecond)
	series := ping * int64(switchCheckFor/switchCheckEvery)
	t.Logf("after an outage or a failover: a check every %v for %v, at most %d commands", switchCheckEvery,
		switchCheckFor, series)
	require.LessOrEqual(t, series, int64(maxSwitchCheckCommands))
}
