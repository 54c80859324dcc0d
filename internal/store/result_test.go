package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// saveResult stores data as tk's result under tk's lease.
func (e *env) saveResult(tk *Task, data string) error {
	return e.c.SaveResult(e.ctx, &tk.Info, tk.Token, []byte(data))
}

// A result is read back with the task, and after the ack deleted the
// task's record, as a done task that only has its result.
func TestResultOutlivesTheRecord(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("p", ID("a"), Level(2))
		tk := e.leaseOne("w")
		require.NoError(t, e.saveResult(tk, "rows=12"))

		rec := e.inspect("a")
		require.Equal(t, StateActive, rec.State)
		require.False(t, rec.ResultOnly)
		require.Equal(t, []byte("rows=12"), rec.Result)
		require.True(t, rec.ResultAt.Equal(e.clk.Now()), "written at %v", rec.ResultAt)
		require.True(t, rec.ResultExpiresAt.Equal(e.clk.Now().Add(defaultResultRetention)))

		require.NoError(t, e.c.Ack(e.ctx, tk))
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.task("a"), e.c.keys.state("a")).Val(), "the record is gone")
		done := e.inspect("a")
		require.True(t, done.ResultOnly)
		require.Equal(t, StateDone, done.State)
		require.Equal(t, []byte("rows=12"), done.Result)
		require.Equal(t, "t", done.Type)
		require.Equal(t, 2, done.Level)
		require.True(t, done.EnqueuedAt.Equal(tk.EnqueuedAt))
		requireLeaseLost(t, e.saveResult(tk, "after the ack"))
		require.Equal(t, []byte("rows=12"), e.inspect("a").Result)
	})
}

// With Retention, the done record is kept and shown with its result;
// once the record expires, the result alone.
func TestResultWithRetainedRecord(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Retention = time.Minute })
		e.enqueue("p", ID("a"))
		tk := e.leaseOne("w")
		require.NoError(t, e.saveResult(tk, "r"))
		require.NoError(t, e.c.Ack(e.ctx, tk))
		kept := e.inspect("a")
		require.Equal(t, StateDone, kept.State)
		require.False(t, kept.ResultOnly)
		require.Equal(t, []byte("p"), kept.Payload)
		require.Equal(t, []byte("r"), kept.Result)

		e.clk.Advance(2 * time.Minute)
		e.beat("w2", 1, 0) // removes finished records past retention
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.task("a")).Val())
		alone := e.inspect("a")
		require.True(t, alone.ResultOnly)
		require.Equal(t, []byte("r"), alone.Result)
	})
}

// A later attempt after a retry replaces the result: the latest wins.
func TestResultAfterRetry(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"))
		first := e.leaseOne("w")
		require.NoError(t, e.saveResult(first, "first"))
		require.NoError(t, e.c.Retry(e.ctx, first, e.clk.Now(), "boom"))
		require.Equal(t, []byte("first"), e.inspect("a").Result, "kept while the task waits for its retry")

		e.clk.Advance(time.Second)
		second := e.leaseOne("w")
		require.Equal(t, 1, second.Attempt)
		require.NoError(t, e.saveResult(second, "second"))
		require.NoError(t, e.c.Ack(e.ctx, second))
		done := e.inspect("a")
		require.Equal(t, []byte("second"), done.Result)
		require.True(t, done.ResultAt.Equal(e.clk.Now()))
	})
}

// A worker whose lease was lost cannot write a result: it changes nothing.
func TestResultFencedByLease(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"))
		stale := e.leaseOne("w1")
		require.NoError(t, e.saveResult(stale, "stale's"))

		e.clk.Advance(defaultLeaseDuration + time.Second) // w1 stops beating: recovered
		fresh := e.leaseOne("w2")
		require.Equal(t, 1, fresh.Recoveries)
		require.NoError(t, e.saveResult(fresh, "fresh's"))
		requireLeaseLost(t, e.saveResult(stale, "stale overwrite"))
		require.Equal(t, []byte("fresh's"), e.inspect("a").Result)

		// A task that was never leased, or is gone, takes no result.
		e.enqueue("", ID("b"))
		requireLeaseLost(t, e.c.SaveResult(e.ctx, &Info{ID: "b", Type: "t"}, "", []byte("x")))
		requireLeaseLost(t, e.c.SaveResult(e.ctx, &Info{ID: "none", Type: "t"}, fresh.Token, []byte("x")))
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.result("b"), e.c.keys.result("none")).Val())

		// A state of the wrong type fails closed.
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.state("a")).Err())
		require.NoError(t, e.rdb.HSet(e.ctx, e.c.keys.state("a"), "tk", fresh.Token).Err())
		err := e.saveResult(fresh, "over a corrupt state")
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, e.c.keys.state("a")+" is not a string")
		require.True(t, strings.HasSuffix(e.rdb.Get(e.ctx, e.c.keys.result("a")).Val(), "fresh's"), "changes nothing")
	})
}

// A result expires after ResultRetention, counted from its last write.
func TestResultExpires(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		const keep = 400 * time.Millisecond
		e := newEnv(t, b, func(c *Config) { c.ResultRetention = keep })
		e.enqueue("", ID("a"))
		tk := e.leaseOne("w")
		require.NoError(t, e.saveResult(tk, "r"))
		require.NoError(t, e.c.Ack(e.ctx, tk))
		ttl := e.rdb.PTTL(e.ctx, e.c.keys.result("a")).Val()
		require.True(t, ttl > 0 && ttl <= keep, "PTTL %v", ttl)
		require.Equal(t, []byte("r"), e.inspect("a").Result)
		if b.IsMini() {
			b.Miniredis.FastForward(keep)
		}
		require.Eventually(t, func() bool {
			_, err := e.c.Inspect(e.ctx, "a")
			return errors.Is(err, ErrTaskNotFound)
		}, 5*time.Second, 20*time.Millisecond, "the result expired, and with it the task")
	})
}

// An oversized result is refused before any write; the earlier result,
// the checkpoint and the lease stay.
func TestResultTooLarge(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.MaxResultBytes = 4 })
		e.enqueue("", ID("a"))
		tk := e.leaseOne("w")
		_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("cp"))
		require.NoError(t, err)
		require.NoError(t, e.saveResult(tk, "four"))
		err = e.saveResult(tk, "fives")
		require.ErrorIs(t, err, ErrResultTooLarge)
		require.EqualError(t, err, "overtake: result too large: 5 bytes, limit 4")
		rec := e.inspect("a")
		require.Equal(t, []byte("four"), rec.Result)
		require.Equal(t, []byte("cp"), rec.Checkpoint)
		require.Equal(t, StateActive, rec.State)
		require.NoError(t, e.c.Ack(e.ctx, tk), "the lease is intact")

		unlimited := newEnv(t, b, func(c *Config) { c.MaxResultBytes = -1 })
		unlimited.enqueue("", ID("big"))
		big := unlimited.leaseOne("w")
		require.NoError(t, unlimited.saveResult(big, strings.Repeat("x", 2<<20)))
		require.Len(t, unlimited.inspect("big").Result, 2<<20)
	})
}

// A result left by an earlier task with the same ID is not the new task's,
// not even once the new task completed without a result of its own,
// whether the new task came alone, scheduled or in a batch;
// deleting a dead letter deletes its result.
func TestResultBelongsToItsTask(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		reuse := map[string]func(id string){
			"alone": func(id string) { e.enqueue("", ID(id)) },
			"scheduled": func(id string) {
				e.enqueue("", ID(id), ProcessIn(time.Second))
				e.clk.Advance(time.Second)
			},
			"batch": func(id string) {
				ids := []string{id, id + "-2"}
				_, err := e.c.EnqueueEach(e.ctx, []*Task{NewTask("t", nil), NewTask("t", nil)},
					func(i int) []Option { return []Option{ID(ids[i])} })
				require.NoError(t, err)
			},
			"batch unique": func(id string) {
				_, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", []byte(id))}, ID(id), Unique(time.Minute))
				require.NoError(t, err)
			},
		}
		for name, enqueue := range reuse {
			e.enqueue("", ID(name))
			tk := e.leaseOne("w")
			require.NoError(t, e.saveResult(tk, "old"))
			require.NoError(t, e.c.Ack(e.ctx, tk))
			require.Equal(t, []byte("old"), e.inspect(name).Result)
			e.clk.Advance(time.Second)
			enqueue(name)
			again := e.inspect(name)
			require.NotEqual(t, StateDone, again.State, name)
			require.Nil(t, again.Result, "%s: the earlier task's result", name)
			for _, tk := range e.lease("w", 2) {
				require.NoError(t, e.c.Ack(e.ctx, tk), name)
			}
			_, err := e.c.Inspect(e.ctx, name)
			require.ErrorIs(t, err, ErrTaskNotFound, "%s: the earlier task's result outlived the new task", name)
		}

		e.enqueue("", ID("a"))
		tk := e.leaseOne("w")
		require.NoError(t, e.saveResult(tk, "partial"))
		require.NoError(t, e.c.DeadLetter(e.ctx, tk, "bad input"))
		dead := e.inspect("a")
		require.Equal(t, StateDead, dead.State)
		require.Equal(t, []byte("partial"), dead.Result)
		require.NoError(t, e.c.DeleteDead(e.ctx, "a"))
		e.gone("a")
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.result("a")).Val())
	})
}

func TestDecodeResult(t *testing.T) {
	r, ok := decodeResult("5|9|3|1|4:type|with|bars")
	require.True(t, ok)
	require.Equal(t, storedResult{at: time.UnixMilli(5), expires: time.UnixMilli(9), enqueued: time.UnixMilli(3),
		level: 1, typ: "type", data: []byte("|with|bars")}, r)
	for _, bad := range []string{"", "1|2|3|4", "x|2|3|4|1:t", "1|2|3|4|t", "1|2|3|4|9:t", "1|2|3|4|-1:t"} {
		_, ok := decodeResult(bad)
		require.False(t, ok, "%q", bad)
	}
	_, ok = resultOnly("a", "garbage")
	require.False(t, ok)
}
